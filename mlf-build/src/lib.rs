//! # mlf-build
//!
//! The build-time side of [mlf](https://github.com/mlf-rs/mlf): in `build.rs` it reads a compiled
//! model (an Apache TVM Model Library Format archive of any metadata version, or a Kendryte
//! kmodel), plans its static memory, compiles its C for `$TARGET`, and writes the typed Rust
//! module that `mlf_runtime::include_model!` includes.
//!
//! ## The workflow
//!
//! `build.rs` (with `mlf-build` in `[build-dependencies]`; paths are relative to `Cargo.toml`):
//!
//! ```no_run
//! fn main() {
//!     mlf_build::Model::open("models/digits.tar")
//!         .params(mlf_build::Placement::Embedded) // weights in flash, used in place
//!         .compile_or_exit(); // an error fails the build with cargo's error naming the file and field
//! }
//! ```
//!
//! Then in the crate, with `mlf-runtime` (feature `macros`) in `[dependencies]` — compiled and
//! run on [mlf-runtime's page](https://docs.rs/mlf-runtime):
//!
//! ```rust,ignore
//! mlf_runtime::include_model!("models/digits.tar"); // -> pub mod digits { … }
//! let mut net = digits::Model::take().unwrap(); // the model's static memory, once at a time
//! let out = net.run(&digits::Inputs { pixels: &pixels })?;
//! ```
//!
//! Or list the models in `Cargo.toml` with their budgets and build them all with
//! [`compile_listed`]; a model that needs more static RAM or flash than its budget fails the
//! build, naming the model and both numbers:
//!
//! ```toml
//! [[package.metadata.mlf.models]]
//! path = "models/digits.tar"
//! ram = "1 KiB"
//! flash = "64 KiB"
//! ```
//!
//! ## How big must the arena be?
//!
//! Known before anything runs. [`open`] reads a model's description, and the build plans every
//! byte (what [`Built`] and its [`MemoryReport`] give; `cargo mlf build` prints it):
//!
//! ```
//! let model = mlf_build::open("../examples/digits/model/digits.tar")?;
//! assert_eq!(model.name, "default");
//! let input = &model.inputs[0];
//! assert_eq!((input.name.as_str(), input.shape.as_slice()), ("pixels", &[1, 64][..]));
//! assert_eq!(model.outputs[0].bytes(), 40); // ten f32 scores
//! # Ok::<(), mlf_build::Error>(())
//! ```
//!
//! ## Features
//!
//! - `build` (default): the TVM readers, the C compiler, the build step ([`Model`],
//!   [`compile_listed`], [`open`]). Without it the crate holds what `include_model!` needs: the
//!   kmodel reader, code generation and finding what the build step wrote.
//! - `cli`: what only `cargo mlf` uses (inspection reports, plan pictures, clap parsing).
#![forbid(unsafe_code)]
// Examples show build scripts, whose `fn main` is the point of the example.
#![allow(clippy::needless_doctest_main)]
#![warn(missing_docs)]
// Without every feature, what only the build step or the command line uses is compiled but not
// called (the executor backends serve all three); the full build checks for dead code.
#![cfg_attr(not(all(feature = "build", feature = "cli")), allow(dead_code, unused_imports))]

// Inside: data flows one way, one folder per layer: `support` (bytes, dtypes, names) → `model`
// (the model description, with types of its own) ← `read` (one reader per format) → `plan`
// (static memory plans) → `codegen` (generated code as values) → `backend` (one implementation
// per executor: graph, AOT, kmodel) → `build` (the only layer that writes files or runs the
// compiler) → `cli`. The repository's README explains the design.

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

pub use build::report::report_error;
pub use error::{Advice, Error, ErrorKind, Result};
pub use model::{Executor, Fact, Kpu, MemoryInfo, ModelDesc, ModelFormat, ParamInfo, Placement, TensorInfo};
pub use plan::report::{Flash, MemoryReport, Ram};
pub use support::dtype::DType;

#[cfg(feature = "build")]
pub use build::model::{Built, Model};
#[cfg(feature = "build")]
pub use build::script::{compile_listed, compile_listed_or_exit};
#[cfg(feature = "build")]
pub use build::split_folder::{PackOptions, pack_folder, pack_folder_with};
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
    pub use crate::build::include::{kmodel_module, kmodel_module_in, kmodel_module_on};
    pub use crate::build::layout::{
        FileStamp, Layout, Located, NotLocated, Stamp, built_sections, built_shared_arena, fingerprint, locate,
    };
    pub use crate::read::sniff::{FileKind, sniff};

    // cargo mlf: reports, budgets, the manifest table, pictures, inspection.
    pub use crate::backend::{
        BoxKind, OperatorMemory, Picture, PlanBox, has_build_step, memory_report, memory_report_on,
    };

    /// What the memory plan says of each operator the profile hook reports, in run order (its
    /// arena window and parameter bytes; empty when the backend cannot say).
    pub fn operator_memory(desc: &crate::ModelDesc) -> crate::Result<Vec<OperatorMemory>> {
        crate::backend::of(desc).operator_memory()
    }
    #[cfg(feature = "build")]
    pub use crate::build::compile::write_if_changed;
    #[cfg(feature = "build")]
    pub use crate::build::libraries::UserLibraries;
    #[cfg(feature = "build")]
    pub use crate::build::output;
    #[cfg(feature = "build")]
    pub use crate::build::runnable;
    #[cfg(feature = "build")]
    pub use crate::build::{budget, manifest};
    #[cfg(feature = "cli")]
    pub use crate::cli::{inspect, npy, svg};
    pub use crate::plan::report::{SectionSizes, SharedArena, Totals};
    pub use crate::plan::stack::StackFigure;
    pub use crate::support::dtype::DTypeCode;
    pub use crate::support::files;
    pub use crate::support::{bytes, names, section, size};
    /// Pack signing keys (`cargo mlf keygen`).
    #[cfg(feature = "cli")]
    pub use mlf_pack::sign as pack_sign;

    /// The model description's types.
    pub mod model {
        pub use crate::model::*;
    }

    /// The readers, for tests and fuzzing.
    #[cfg(feature = "build")]
    pub mod read {
        pub use crate::read::{
            archive, blob, csource, detect, graph, header, json, kmodel, metadata, mlf, object_check, param_pack,
            params, relax, relay,
        };
    }

    /// Memory plans, for tests and benchmarks.
    pub mod plan {
        pub use crate::plan::{aot, graph, limits, pack, relax, split};
    }

    /// Generated code, for the macro and tests.
    pub mod codegen {
        pub use crate::codegen::{IncludePath, graph, kmodel, render, section::Sections, tvm::ParamCode};
    }

    /// Writers of TVM formats, for tests and fuzzing.
    #[cfg(feature = "build")]
    pub mod testing {
        pub use crate::testing::{blob, params};

        /// An object as an external build rewrites it, and the check of its architecture and
        /// ABI against a build target.
        pub mod objects {
            pub use crate::build::objects::external_object;
            pub use crate::build::targets::check_object_arch;
        }
    }

    /// The measured sections of a compiled library, and the memory of a linked firmware.
    #[cfg(feature = "build")]
    pub use crate::build::measure::{FirmwareMemory, measure_firmware, measure_library};
}
