//! # mlf-pack
//!
//! The parameter packs of mlf, shared by the build side (`mlf-build`: `cargo mlf pack` writes
//! them, `cargo mlf inspect` reads them) and the runtime (`mlf-runtime`: `FlashArchive` and
//! `Slots` on a device, `PackedArchive` on a host), so that every reader applies one rule:
//!
//! - [`tar`]: the pack rule and the one name rule ([`tar::member_name`]);
//! - [`header`]: the pack header (length, sequence, model digest, hash of the rest) and
//!   [`header::check`], which checks a pack once when it is opened;
//! - [`sign`]: Ed25519 signatures (verification `no_std`; signing and PEM keys with the feature
//!   `sign`) and the model digest;
//! - `write` (feature `sign`): writing packs.
//!
//! `no_std` and allocation-free without the feature `sign`.
#![cfg_attr(not(any(test, feature = "sign")), no_std)]
#![warn(missing_docs)]

pub mod header;
pub mod sign;
pub mod tar;
#[cfg(feature = "sign")]
pub mod write;

pub use header::{Checked, PackError, PackHeader, check};
pub use tar::TarError;
