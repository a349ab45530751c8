//! Small pieces every layer uses: shared byte buffers and a checked reader, tensor element
//! types, the naming rules for C symbols and Rust identifiers, a content hash, and byte counts
//! for people.

pub mod bytes;
pub mod dtype;
pub mod files;
pub mod hash;
pub mod names;
pub mod section;
pub mod size;
