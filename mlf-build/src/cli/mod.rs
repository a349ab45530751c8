//! Tools of the `cargo mlf` command line: inspection reports, the picture of a memory plan, `.npy` tensor files.

pub mod blob;
pub mod inspect;
pub mod npy;
pub mod relax;
pub mod runs_on;
pub mod svg;
