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

pub mod backend;
pub mod build;
pub mod cli;
pub mod codegen;
pub mod error;
pub mod model;
pub mod plan;
pub mod read;
pub mod support;
pub mod testing;

pub use build::model::{Built, Model};
pub use build::script::compile_listed;
pub use error::{Error, ErrorKind, Result};
pub use model::{ModelDesc, Placement};
pub use read::MlfOptions;

use std::path::Path;

/// Opens a model file (an MLF `.tar`, an extracted MLF directory, or a kmodel) and reads its
/// description.
pub fn open(path: impl AsRef<Path>) -> Result<ModelDesc> {
    read::open(path.as_ref(), &MlfOptions::default())
}

/// Like [`open`], choosing a module of a multi-module archive.
pub fn open_with(path: impl AsRef<Path>, opts: &MlfOptions) -> Result<ModelDesc> {
    read::open(path.as_ref(), opts)
}
