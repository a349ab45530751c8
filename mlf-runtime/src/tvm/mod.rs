//! TVM's C ABI: the FFI types, the backend functions generated C calls, the tables generated
//! modules keep in statics, and [`Run`], which generated modules use to call into the model's C.

mod arrays;
pub mod backend;
pub mod ffi;
mod lazy;
mod model_workspace;
mod run;
mod tables;
pub mod workspace;

pub use arrays::{ArrayTable, Bind, HookFn, StageHook, Step, StreamGuard, Streaming};
pub use model_workspace::{Installed, ModelWorkspace, WORKSPACE_MESSAGE_BYTES};
pub use run::{Run, call_ffi, data_ptr};
pub use tables::{Call, FfiArgs, MAX_PACKED_ARGS, Pointers, RunTensor, Scratch, Stage, Tensor};
pub use workspace::RunWorkspace;
