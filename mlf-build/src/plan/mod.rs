//! Static memory plans, computed at build time, and the memory report made from them.

pub mod aot;
pub mod graph;
pub mod limits;
pub mod pack;
pub mod params;
pub mod relax;
pub mod report;
pub mod split;
pub mod stack;
