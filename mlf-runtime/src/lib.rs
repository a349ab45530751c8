//! # mlf-runtime
//!
//! Run a compiled neural-network model as a typed Rust module: no heap, no parsing at run time,
//! every byte of its memory planned at build time. Models come from Apache TVM (Model Library
//! Format archives, built in `build.rs` by [mlf-build](https://docs.rs/mlf-build)) or Kendryte
//! nncase (K210 kmodels, read by the macro itself).
//!
//! ## The workflow
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! mlf-runtime = { version = "0.1", features = ["macros"] }
//! [build-dependencies]
//! mlf-build = "0.1"
//! ```
//!
//! `build.rs` compiles the model's C for the target and writes its Rust module into `OUT_DIR`
//! (kmodels need no build step):
//!
//! ```no_run
//! fn main() {
//!     mlf_build::Model::open("models/digits.tar").compile().unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! `src/main.rs` includes the module, takes the model's static memory and runs it. Here with the
//! digits classifier of mlf's repository (a TVM graph-executor MLF; paths are relative to
//! `Cargo.toml`, in `build.rs` as in the macro):
//!
//! ```
//! // -> pub mod digits { Model, Inputs, Outputs, ARENA_BYTES, PIXELS_SHAPE, … }
//! mlf_runtime::include_model!("../examples/digits/model/digits.tar");
//!
//! fn main() -> Result<(), mlf_runtime::Error> {
//!     let pixels = [0.0f32; 64]; // an 8×8 image, one f32 per pixel
//!     // The model's static memory, handed out once at a time (`None` while another is alive).
//!     let mut net = digits::Model::take().expect("not taken elsewhere");
//!     let out = net.run(&digits::Inputs { pixels: &pixels })?;
//!     let scores: &[f32; 10] = out.output;
//!     let digit = (0..10).max_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
//!     assert!(digit < 10);
//!     // All the static RAM the model uses, known at build time.
//!     assert_eq!(digits::ARENA_BYTES, 176);
//!     Ok(())
//! }
//! ```
//!
//! Inputs and outputs are fields named after the model's tensors, typed as flat arrays of their
//! element type; outputs borrow the model's arena until the next run. A model whose arena does
//! not fit the budget of `[package.metadata.mlf]` fails the build, naming both numbers.
//!
//! ## Features
//!
//! - `macros`: re-exports `include_model!`.
//! - `std`: [`Error`] implements `std::error::Error`, each thread may run its own model at the
//!   same time, and [`params`] gains sources that read files.
//!
//! Without `std` the crate is `no_std` and allocation-free, for firmware.
//!
//! ## What generated modules use
//!
//! The items below are what generated modules call; applications rarely name them, except
//! [`Error`] and the [`params`] sources of models with external parameters:
//!
//! - [`TakeOnce`], [`Arena`], [`Aligned`]: statically allocated model state, handed out once at
//!   a time;
//! - [`shared_arena!`], [`InArena`]: one static arena for several models, one model at a time;
//! - [`tvm`]: the TVM C backend functions the model's C calls (`TVMBackendAllocWorkspace`, …),
//!   implemented in Rust over the running model's static arena;
//! - [`kmodel`]: the Kendryte K210 kmodel parser and interpreter, with the KPU emulated on
//!   computers without one;
//! - [`params`]: parameters kept outside the program image, checked on every read.
#![no_std]
#![warn(missing_docs)]
// The crate page shows a build script, whose `fn main` is the point of the example.
#![allow(clippy::needless_doctest_main)]

#[cfg(feature = "std")]
extern crate std;

mod cell;
mod element;
mod error;
mod message;
pub mod params;
mod shared;
pub mod tvm;

pub use cell::{Aligned, Aligned256, Arena, StaticArena, TakeOnce, Taken};
pub use element::{Element, as_bytes, view};
pub use shared::InArena;

/// What [`shared_arena!`] expands to calls (not for users).
#[doc(hidden)]
pub mod __shared {
    pub use crate::shared::{largest, same_name};
}
pub use error::{Error, Message};

/// Kendryte K210 kmodels: parser, interpreter and KPU emulation (the `mlf-kmodel` crate, shared
/// with `mlf-build` so that the build and the run use one parser).
pub use mlf_kmodel as kmodel;
/// The per-operator profiling hook (feature `profile`; see `docs/profiling.md`).
#[cfg(feature = "profile")]
pub use mlf_kmodel::profile;

#[cfg(feature = "macros")]
pub use mlf_macros::include_model;
