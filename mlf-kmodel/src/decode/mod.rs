//! Decoding: from a model's bytes to typed headers, layers and nodes, every read bounds-checked.
//! Nothing here checks addresses against memory pools (`crate::check` does).

mod names;
mod step;
pub mod v3;
pub mod v4;
pub mod v5;

pub use step::{Step, Version, identify};
