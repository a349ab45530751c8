//! TVM's C ABI: the FFI types, the backend functions generated C calls, and [`Run`], which
//! generated modules use to call into the model's C.

pub mod backend;
pub mod ffi;
mod run;
pub mod workspace;

pub use run::{MAX_PACKED_ARGS, Run, UnpackedFn};
