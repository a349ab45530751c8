//! # mlf-runtime
//!
//! The `no_std`, allocation-free runtime for models compiled by mlf:
//!
//! - [`Error`]: a small `Copy` error type;
//! - [`TakeOnce`], [`Arena`], [`StaticArena`], [`Aligned`]: statically allocated model state,
//!   handed out once at a time;
//! - the TVM C backend functions generated C calls (`TVMBackendAllocWorkspace`, …), implemented
//!   in Rust over the running model's static arena;
//! - [`kmodel`]: the Kendryte K210 kmodel parser, interpreter and KPU emulation;
//! - `include_model!` (feature `macros`).
//!
//! With the `std` feature, [`Error`] implements `std::error::Error` and each thread may run its
//! own model at the same time.
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod cell;
mod element;
mod error;
mod message;
pub mod params;
pub mod tvm;

pub use cell::{Aligned, Aligned256, Arena, StaticArena, TakeOnce, Taken};
pub use element::{Element, as_bytes, view};
pub use error::{Error, Message};

/// Kendryte K210 kmodels: parser, interpreter and KPU emulation (the `mlf-kmodel` crate, shared
/// with `mlf-build` so that the build and the run use one parser).
pub use mlf_kmodel as kmodel;

#[cfg(feature = "macros")]
pub use mlf_macros::include_model;
