//! The value types of V4 node bodies: opcodes, memory ranges, shapes, windows, clamps and
//! requantisation parameters.

use crate::error::Pool;
use crate::types::DataType;

/// Opcodes (nncase v0.2 `src/common/include/runtime/runtime_op.def`).
pub mod op {
    #![allow(missing_docs)]
    pub const BINARY: u32 = 0x00;
    pub const CONCAT: u32 = 0x01;
    pub const CONV2D: u32 = 0x02;
    pub const DEQUANTIZE: u32 = 0x03;
    pub const MATMUL: u32 = 0x04;
    pub const PAD: u32 = 0x05;
    pub const QUANTIZE: u32 = 0x06;
    pub const REDUCE: u32 = 0x07;
    pub const REDUCE_WINDOW2D: u32 = 0x08;
    pub const MEMORY_COPY: u32 = 0x09;
    pub const RESIZE_IMAGE: u32 = 0x0A;
    pub const SOFTMAX: u32 = 0x0B;
    pub const TRANSPOSE: u32 = 0x0C;
    pub const STRIDED_SLICE: u32 = 0x0D;
    pub const UNARY: u32 = 0x0E;
    pub const QUANTIZED_CONV2D: u32 = 0x0F;
    pub const QUANTIZED_MATMUL: u32 = 0x10;
    pub const QUANTIZED_BINARY: u32 = 0x11;
    pub const TABLE_LOOKUP1D: u32 = 0x12;
    pub const CONV2D_TRANSPOSE: u32 = 0x13;
    pub const NNIL_UNARY_METHOD: u32 = 0x14;
    pub const CPU_CONV2D: u32 = 0x1001;
    pub const CPU_DEPTHWISE_CONV2D: u32 = 0x1002;
    pub const CPU_REDUCE_WINDOW2D: u32 = 0x1003;
    pub const CPU_QUANTIZED_CONV2D: u32 = 0x1004;
    pub const CPU_QUANTIZED_DEPTHWISE_CONV2D: u32 = 0x1005;
    pub const KPU_UPLOAD: u32 = 0x2001;
    pub const KPU_CONV2D: u32 = 0x2002;
}

/// The nncase name of an opcode (`"kpu_conv2d"`, …), or `None` for unknown opcodes.
pub fn op_name(o: u32) -> Option<&'static str> {
    use op::*;
    Some(match o {
        BINARY => "binary",
        CONCAT => "concat",
        CONV2D => "conv2d",
        DEQUANTIZE => "dequantize",
        MATMUL => "matmul",
        PAD => "pad",
        QUANTIZE => "quantize",
        REDUCE => "reduce",
        REDUCE_WINDOW2D => "reduce_window2d",
        MEMORY_COPY => "memory_copy",
        RESIZE_IMAGE => "resize_image",
        SOFTMAX => "softmax",
        TRANSPOSE => "transpose",
        STRIDED_SLICE => "strided_slice",
        UNARY => "unary",
        QUANTIZED_CONV2D => "quantized_conv2d",
        QUANTIZED_MATMUL => "quantized_matmul",
        QUANTIZED_BINARY => "quantized_binary",
        TABLE_LOOKUP1D => "table_lookup1d",
        CONV2D_TRANSPOSE => "conv2d_transpose",
        NNIL_UNARY_METHOD => "nnil_unary_method",
        CPU_CONV2D => "cpu_conv2d",
        CPU_DEPTHWISE_CONV2D => "cpu_depthwise_conv2d",
        CPU_REDUCE_WINDOW2D => "cpu_reduce_window2d",
        CPU_QUANTIZED_CONV2D => "cpu_quantized_conv2d",
        CPU_QUANTIZED_DEPTHWISE_CONV2D => "cpu_quantized_depthwise_conv2d",
        KPU_UPLOAD => "kpu_upload",
        KPU_CONV2D => "kpu_conv2d",
        _ => return None,
    })
}

/// A `memory_range`: pool, element type, byte start and byte size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRange {
    /// The pool.
    pub pool: Pool,
    /// Element type.
    pub dtype: DataType,
    /// First byte.
    pub start: u32,
    /// Bytes.
    pub size: u32,
}

impl MemRange {
    /// Byte range inside the pool.
    pub fn bytes(&self) -> core::ops::Range<usize> {
        self.start as usize..self.start as usize + self.size as usize
    }
}

/// An NCHW (or NHWC for `cpu_*`) shape, checked non-negative.
pub type Shape = [u32; 4];

/// Elements of a shape.
pub fn numel(s: &Shape) -> u64 {
    s.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64))
}

/// Saturating product (sizes from damaged files must not overflow).
pub(crate) fn prod(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |a, &x| a.saturating_mul(x))
}

/// `{before, after}` padding (negative crops).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Padding {
    /// Before.
    pub before: i32,
    /// After.
    pub after: i32,
}

/// Window geometry of convolutions and window reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Window {
    /// Padding of H.
    pub pad_h: Padding,
    /// Padding of W.
    pub pad_w: Padding,
    /// Filter (h, w).
    pub filter: (i32, i32),
    /// Stride (h, w).
    pub stride: (i32, i32),
    /// Dilation (h, w).
    pub dilation: (i32, i32),
}

impl Window {
    /// Output size of an axis of size `n` (`get_windowed_output_size`).
    pub fn out_size(n: i64, f: i32, s: i32, d: i32, p: Padding) -> i64 {
        let eff = (f as i64 - 1) * d as i64 + 1;
        (n + p.before as i64 + p.after as i64 - eff + s as i64) / s as i64
    }
    /// (out_h, out_w) for input (h, w).
    pub fn out_hw(&self, h: u32, w: u32) -> (i64, i64) {
        (
            Self::out_size(h as i64, self.filter.0, self.stride.0, self.dilation.0, self.pad_h),
            Self::out_size(w as i64, self.filter.1, self.stride.1, self.dilation.1, self.pad_w),
        )
    }
}

/// Fused clamp `{min, max}`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clamp {
    /// Lower bound.
    pub min: f32,
    /// Upper bound.
    pub max: f32,
}

impl Clamp {
    /// `clamp(v, min, max)` as nncase's `apply_activation`.
    #[inline]
    pub fn apply(&self, v: f32) -> f32 {
        let v = if v < self.min { self.min } else { v };
        if v > self.max { self.max } else { v }
    }
}

/// Quantised requantisation parameters `(offset, mul, shift)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requant {
    /// Offset.
    pub offset: i32,
    /// Multiplier.
    pub mul: i32,
    /// Shift (low 8 bits used, as the kernels take a `uint8_t`).
    pub shift: u8,
}

/// Iterations of `for (i = begin; stride > 0 ? i < end : i > end; i += stride)`; `None` when
/// `stride == 0`.
pub fn slice_len(begin: i32, end: i32, stride: i32) -> Option<u64> {
    let (b, e, s) = (begin as i64, end as i64, stride as i64);
    match s {
        0 => None,
        s if s > 0 => Some(if e > b { ((e - b + s - 1) / s) as u64 } else { 0 }),
        s => Some(if b > e { ((b - e + (-s) - 1) / (-s)) as u64 } else { 0 }),
    }
}
