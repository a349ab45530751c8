//! Runs V4 nodes on the CPU: nncase v0.2's neutral and CPU kernels (nncase v0.2.0-beta4
//! `src/common/include/kernels/neutral/neutral_kernels.h`, `kernels/cpu/cpu_kernels.h`) in
//! IEEE f32 without fused multiply-add. `kpu_conv2d` runs on a KPU backend (`crate::exec`).

mod conv;
mod elementwise;
mod mem;
mod movement;
mod quant;
mod window;

pub(crate) use mem::Mem;
pub use quant::{carry_shift_up, mul_and_carry_shift};

use crate::decode::v4::Node;
use crate::error::KmodelError;

/// Runs one node other than `kpu_conv2d` (which needs the KPU). Ranges and counts were checked
/// when the model was parsed; `scratch` is the CPU layers' scratch.
pub(crate) fn run_node(n: &Node<'_>, m: &mut Mem<'_>, scratch: &mut [u8]) -> Result<(), KmodelError> {
    match *n {
        Node::Conv2d { .. }
        | Node::QuantizedConv2d { .. }
        | Node::Conv2dTranspose { .. }
        | Node::CpuConv2d { .. }
        | Node::CpuQuantizedConv2d { .. } => conv::run(n, m),
        Node::ReduceWindow2d { input, output, op, in_shape, win, init, act, nhwc } => {
            window::reduce_window2d(m, &input, &output, op, &in_shape, &win, init, act, nhwc)
        }
        Node::ResizeImage { input, output, in_shape, out_h, out_w, bilinear, align_corners } => {
            window::resize(m, &input, &output, &in_shape, out_h, out_w, bilinear, align_corners)
        }
        Node::Concat { .. }
        | Node::MemoryCopy { .. }
        | Node::Pad { .. }
        | Node::Transpose { .. }
        | Node::StridedSlice { .. }
        | Node::KpuUpload { .. } => movement::run(n, m, scratch)?,
        Node::KpuConv2d { .. } => {}
        _ => elementwise::run(n, m),
    }
    Ok(())
}
