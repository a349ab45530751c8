//! Tools of the `cargo mlf` command line: inspection reports and the picture of a memory plan.

pub mod blob;
pub mod inspect;
pub mod runs_on;
pub mod svg;
