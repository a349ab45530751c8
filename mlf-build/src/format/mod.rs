//! One reader per format. Readers know formats and nothing else.

pub mod blob;
pub mod csource;
pub mod dmlc;
pub mod graph;
pub mod header;
pub mod json;
pub mod metadata;
pub mod params;
pub mod relay;
pub mod target;
