//! Opening any model file: its kind detected, then its reader.

use std::path::Path;

use super::{blob, detect, kmodel, mlf};
use crate::error::{Error, Result};
use crate::model::ModelDesc;

pub use super::mlf::ReadOptions;

/// Reads the model at `path` (an MLF `.tar`, an extracted MLF directory, or a kmodel).
pub fn open(path: &Path, opts: &ReadOptions) -> Result<ModelDesc> {
    open_detected(path, detect::detect_loaded(path)?, opts)
}

/// [`open`] for a path already detected (the tar detection read is not read again).
pub fn open_detected(path: &Path, detected: detect::Detected, opts: &ReadOptions) -> Result<ModelDesc> {
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
