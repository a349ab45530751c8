//! Static memory plans, computed at build time.

pub mod graph;
pub mod pack;
