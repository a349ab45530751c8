//! The build step: writes files, runs the C compiler.

pub mod compile;
