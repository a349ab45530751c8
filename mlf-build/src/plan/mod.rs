//! Static memory plans, computed at build time.

pub mod aot;
pub mod graph;
pub mod pack;
pub mod params;
