//! The readers: one per format, each turning what it parses into the model description (or, for
//! files that are not models, into a report of what they hold). Readers know formats and nothing
//! else; they never plan, generate code or write files.

pub mod archive;
pub mod blob;
pub mod csource;
pub mod detect;
pub mod dmlc;
pub mod graph;
pub mod header;
pub mod json;
pub mod kmodel;
pub mod metadata;
pub mod mlf;
pub mod param_pack;
pub mod params;
pub mod relay;
pub mod target;

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::ModelDesc;

pub use mlf::MlfOptions;

/// Reads the model at `path` (an MLF `.tar`, an extracted MLF directory, or a kmodel).
pub fn open(path: &Path, opts: &MlfOptions) -> Result<ModelDesc> {
    open_detected(path, detect::detect_loaded(path)?, opts)
}

/// [`open`] for a path already detected (the tar detection read is not read again).
pub fn open_detected(path: &Path, detected: detect::Detected, opts: &MlfOptions) -> Result<ModelDesc> {
    match detected.kind {
        detect::FileKind::Mlf => mlf::read(&detected.into_archive(path)?, opts),
        detect::FileKind::Kmodel => kmodel::read(path),
        detect::FileKind::TvmModule => Err(blob::refusal(path, &detected)),
        other => Err(Error::unsupported(format!(
            "this is a {} file, not a model that can be built (use `cargo mlf inspect` to see what it holds)",
            match other {
                detect::FileKind::Params => "TVM parameter",
                _ => "parameter pack",
            }
        ))
        .in_file(path)),
    }
}
