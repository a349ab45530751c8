//! kmodel V4 (nncase v0.2): the header, the input/output memory ranges and shapes, the
//! constants, the node headers and every node body of `runtime_op.def`, decoded (checked
//! against the model's memory by `crate::check::v4`).
//!
//! Container (little-endian): a 40-byte header {'KMDL', version = 4, flags, target (0 CPU,
//! 1 K210), constants (bytes), main_mem (bytes), nodes, inputs, outputs, reserved0 (never
//! initialised by the writer)}; `inputs` × memory_range; `inputs` × shape (4 × i32, NCHW);
//! `outputs` × memory_range; the constants; `nodes` × {opcode, body_size}; the bodies, each
//! padded to an 8-aligned file offset. A memory_range is {memory_type (0 const, 1 main,
//! 2 KPU RAM), datatype (0 f32, 1 u8), start, size} in bytes. Sources: nncase v0.2.0-beta4
//! `src/common/include/runtime/model.h` (layout), `src/runtime/interpreter.cpp` (loader),
//! `neutral/neutral_ops_body.h` and `k210/k210_ops_body.h` (bodies).

mod body;
mod header;
mod node;
mod types;

pub use body::decode;
pub use header::{HEADER, Header};
pub(crate) use header::{concat_parts, range, shape};
pub use node::Node;
pub(crate) use types::prod;
pub use types::{Clamp, MemRange, Padding, Requant, Shape, Window, numel, op, op_name, slice_len};
