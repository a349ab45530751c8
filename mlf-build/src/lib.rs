//! # mlf-build
//!
//! The build-time side of [mlf](https://example.invalid/mlf): it reads compiled models (TVM
//! Model Library Format archives of every metadata version, Kendryte kmodels), describes them,
//! plans their static memory, generates the typed Rust module `include_model!` includes, and
//! compiles the model's C for the target.
//!
//! In a build script:
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     mlf_build::Model::open("models/digits.tar")
//!         .params(mlf_build::Placement::Embedded)
//!         .compile()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! Reading a model:
//!
//! ```no_run
//! let model = mlf_build::open("models/digits.tar")?;
//! println!("{} takes {} inputs", model.name, model.inputs.len());
//! # Ok::<(), mlf_build::Error>(())
//! ```
//!
//! ## Features
//!
//! - `build` (default): the TVM readers, the C compiler, the build step ([`Model`],
//!   [`compile_listed`], [`open`]). Without it the crate holds what `include_model!` needs: the
//!   kmodel reader, code generation and finding what the build step wrote.
//! - `cli`: what only `cargo mlf` uses (inspection reports, plan pictures, clap parsing).
//!
//! ## Inside
//!
//! Data flows one way, one folder per layer: `support` (bytes, dtypes, names) → `model` (the
//! model description, with types of its own) ← `read` (one reader per format) → `plan` (static
//! memory plans) → `codegen` (generated code as values) → `backend` (one implementation per
//! executor: graph, AOT, kmodel) → `build` (the only layer that writes files or runs the
//! compiler) → `cli`. The repository's README explains the design.
#![forbid(unsafe_code)]
// Examples show build scripts, whose `fn main` is the point of the example.
#![allow(clippy::needless_doctest_main)]
#![warn(missing_docs)]
// Without every feature, what only the build step or the command line uses is compiled but not
// called (the executor backends serve all three); the full build checks for dead code.
#![cfg_attr(not(all(feature = "build", feature = "cli")), allow(dead_code, unused_imports))]

mod backend;
mod build;
#[cfg(feature = "cli")]
mod cli;
mod codegen;
mod error;
mod model;
mod plan;
mod read;
mod support;
#[cfg(feature = "build")]
mod testing;

pub use error::{Error, ErrorKind, Result};
pub use model::{Executor, Fact, MemoryInfo, ModelDesc, ModelFormat, ParamInfo, Placement, TensorInfo};
pub use plan::report::{Flash, MemoryReport, Ram};
pub use support::dtype::DType;

#[cfg(feature = "build")]
pub use build::model::{Built, Model};
#[cfg(feature = "build")]
pub use build::script::compile_listed;
#[cfg(feature = "build")]
pub use build::split_folder::pack_folder;
#[cfg(feature = "build")]
pub use read::ReadOptions;

/// Opens a model file (an MLF `.tar`, an extracted MLF directory, or a kmodel) and reads its
/// description.
#[cfg(feature = "build")]
pub fn open(path: impl AsRef<std::path::Path>) -> Result<ModelDesc> {
    read::open(path.as_ref(), &ReadOptions::default())
}

/// Like [`open`], choosing a module of a multi-module archive.
#[cfg(feature = "build")]
pub fn open_with(path: impl AsRef<std::path::Path>, opts: &ReadOptions) -> Result<ModelDesc> {
    read::open(path.as_ref(), opts)
}

/// Not part of the API: what `include_model!`, `cargo mlf`, the tests and the fuzz targets use
/// beyond the facade. It changes whenever they do.
#[doc(hidden)]
pub mod __private {
    // include_model!: recognising a file, finding what the build step wrote, kmodel modules.
    pub use crate::build::include::kmodel_module;
    pub use crate::build::layout::{Layout, Located, NotLocated, fingerprint, locate};
    pub use crate::read::sniff::{FileKind, sniff};

    // cargo mlf: reports, budgets, the manifest table, pictures, inspection.
    pub use crate::backend::{BoxKind, Picture, PlanBox, has_build_step, memory_report};
    #[cfg(feature = "build")]
    pub use crate::build::compile::write_if_changed;
    #[cfg(feature = "build")]
    pub use crate::build::output;
    #[cfg(feature = "build")]
    pub use crate::build::{budget, manifest};
    #[cfg(feature = "cli")]
    pub use crate::cli::{inspect, npy, svg};
    pub use crate::plan::report::{SectionSizes, Totals};
    pub use crate::support::dtype::DTypeCode;
    pub use crate::support::files;
    pub use crate::support::{bytes, names, size};

    /// The model description's types.
    pub mod model {
        pub use crate::model::*;
    }

    /// The readers, for tests and fuzzing.
    #[cfg(feature = "build")]
    pub mod read {
        pub use crate::read::{
            archive, blob, detect, graph, header, json, kmodel, metadata, mlf, param_pack, params, relay,
        };
    }

    /// Memory plans, for tests and benchmarks.
    pub mod plan {
        pub use crate::plan::{aot, graph, limits, pack, split};
    }

    /// Generated code, for the macro and tests.
    pub mod codegen {
        pub use crate::codegen::{IncludePath, graph, kmodel, render, tvm::ParamCode};
    }

    /// Writers of TVM formats, for tests and fuzzing.
    #[cfg(feature = "build")]
    pub mod testing {
        pub use crate::testing::{blob, params};
    }

    /// The measured sections of a compiled library.
    #[cfg(feature = "build")]
    pub use crate::build::measure::measure_library;
}
