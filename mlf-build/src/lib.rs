//! # mlf-build
//!
//! The build-time side of [mlf](https://example.invalid/mlf): readers for TVM Model Library
//! Format archives (every metadata version TVM wrote) and Kendryte kmodels, the model
//! description every later stage reads, the static memory plan, and Rust code generation.
//!
//! ```no_run
//! let model = mlf_build::open("models/digits.tar")?;
//! println!("{} takes {} inputs", model.name, model.inputs.len());
//! # Ok::<(), mlf_build::Error>(())
//! ```
#![forbid(unsafe_code)]
// Examples show build scripts, whose `fn main` is the point of the example.
#![allow(clippy::needless_doctest_main)]
#![warn(missing_docs)]

pub mod archive;
pub mod budget;
pub mod build;
pub mod builder;
pub mod bytes;
pub mod codegen;
pub mod detect;
pub mod dtype;
pub mod error;
pub mod external;
pub mod format;
pub mod inspect;
pub mod kmodel;
pub mod manifest;
pub mod mlf;
pub mod model;
pub mod names;
pub mod objects;
pub mod plan;
pub mod report;
pub mod svg;

pub use builder::{Built, Model, Params};
pub use error::{Error, ErrorKind, Result};
pub use external::Placement;
pub use manifest::compile_listed;
pub use model::ModelDesc;

use std::path::Path;

/// Opens a model file (an MLF `.tar`, an extracted MLF directory, or a kmodel) and reads its
/// description.
pub fn open(path: impl AsRef<Path>) -> Result<ModelDesc> {
    open_with(path, &mlf::MlfOptions::default())
}

/// Like [`open`], choosing a module of a multi-module archive.
pub fn open_with(path: impl AsRef<Path>, opts: &mlf::MlfOptions) -> Result<ModelDesc> {
    let path = path.as_ref();
    open_detected(path, detect::detect_loaded(path)?, opts)
}

/// [`open_with`] for a path already detected (the tar detection read is not read again).
pub(crate) fn open_detected(path: &Path, detected: detect::Detected, opts: &mlf::MlfOptions) -> Result<ModelDesc> {
    match detected.kind {
        detect::FileKind::Mlf => mlf::read(&detected.into_archive(path)?, opts),
        detect::FileKind::Kmodel => kmodel::read(path),
        detect::FileKind::TvmModule => Err(format::blob::refusal(path, &detected)),
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
