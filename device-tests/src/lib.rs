//! The host side of mlf's on-device tests: finds the tools ([`tools`]), builds the programs of
//! `firmware/` for their target with cargo ([`firmware`]), runs them under QEMU with exact
//! instruction counting ([`qemu`]), parses the `mlf-device …` lines they print ([`report`]) and
//! measures flash and RAM from the linked ELF's section table ([`elf`]). [`programs`] lists
//! every program and how it runs.
//!
//! Used by this crate's tests and `device` bench, and by cargo-mlf's template tests.

pub mod elf;
pub mod firmware;
pub mod programs;
pub mod qemu;
pub mod report;
pub mod tools;

pub use programs::{Program, run_program};
pub use tools::{Need, require};
