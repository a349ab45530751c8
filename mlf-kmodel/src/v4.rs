//! kmodel V4 (nncase v0.2): header, input/output memory ranges and shapes, constants, node
//! headers and every node body of `runtime_op.def`, parsed once and checked
//! (docs/kmodel.md §4, §10).

use super::error::{Block, KmodelError, Part, Pool};
use super::kpu::{self, KPU_RAM_BYTES, KpuConv, KpuLayer};
use super::reader::{Bodies, Body, Reader, table_end, u32_at};
use super::{DataType, IoInfo, Requirements};

/// Opcodes (`runtime_op.def`).
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
fn prod(xs: &[u64]) -> u64 {
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

/// A decoded V4 node.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum Node<'a> {
    Binary {
        a: MemRange,
        b: MemRange,
        output: MemRange,
        op: u32,
        a_shape: Shape,
        b_shape: Shape,
        out_shape: Shape,
        act: Clamp,
    },
    QuantizedBinary {
        a: MemRange,
        b: MemRange,
        output: MemRange,
        op: u32,
        a_shape: Shape,
        b_shape: Shape,
        out_shape: Shape,
        qa: Requant,
        qb: Requant,
        qo: Requant,
    },
    Concat {
        output: MemRange,
        inner: u32,
        outer: u32,
        inputs: &'a [u8],
        dims: &'a [u8],
    },
    Conv2d {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        groups: u32,
        out_channels: u32,
        win: Window,
        act: Clamp,
        weights: &'a [u8],
        bias: &'a [u8],
    },
    QuantizedConv2d {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        groups: u32,
        out_channels: u32,
        win: Window,
        input_offset: i32,
        filter_offset: i32,
        qo: Requant,
        bias: &'a [u8],
        weights: &'a [u8],
    },
    Conv2dTranspose {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        out_shape: Shape,
        groups: u32,
        win: Window,
        act: Clamp,
        weights: &'a [u8],
        bias: &'a [u8],
    },
    Dequantize {
        input: MemRange,
        output: MemRange,
        zero_point: i32,
        scale: f32,
    },
    Quantize {
        input: MemRange,
        output: MemRange,
        zero_point: i32,
        scale: f32,
    },
    MatMul {
        a: MemRange,
        b: MemRange,
        output: MemRange,
        a_rows: u32,
        a_cols: u32,
        b_cols: u32,
        act: Clamp,
        bias: &'a [u8],
    },
    QuantizedMatMul {
        a: MemRange,
        b: MemRange,
        output: MemRange,
        a_rows: u32,
        a_cols: u32,
        b_cols: u32,
        a_offset: i32,
        b_offset: i32,
        qo: Requant,
        bias: &'a [u8],
    },
    MemoryCopy {
        input: MemRange,
        output: MemRange,
    },
    Pad {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        paddings: [Padding; 4],
        value: [u8; 4],
    },
    Reduce {
        input: MemRange,
        output: MemRange,
        op: u32,
        in_shape: Shape,
        out_shape: Shape,
        init: f32,
    },
    ReduceWindow2d {
        input: MemRange,
        output: MemRange,
        op: u32,
        in_shape: Shape,
        win: Window,
        init: f32,
        act: Clamp,
        nhwc: bool,
    },
    ResizeImage {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        out_h: u32,
        out_w: u32,
        bilinear: bool,
        align_corners: bool,
    },
    Softmax {
        input: MemRange,
        output: MemRange,
        inner: u32,
        outer: u32,
        beta: f32,
    },
    Transpose {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        perm: [u32; 4],
    },
    StridedSlice {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        begin: [i32; 4],
        end: [i32; 4],
        strides: [i32; 4],
    },
    Unary {
        input: MemRange,
        output: MemRange,
        op: u32,
    },
    NnilUnary {
        input: MemRange,
        output: MemRange,
        program: &'a [u8],
    },
    TableLookup1d {
        input: MemRange,
        table: MemRange,
        output: MemRange,
    },
    CpuConv2d {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        out_channels: u32,
        depthwise: bool,
        win: Window,
        act: Clamp,
        weights: &'a [u8],
        bias: &'a [u8],
    },
    CpuQuantizedConv2d {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
        out_channels: u32,
        depthwise: bool,
        win: Window,
        input_offset: i32,
        filter_offset: i32,
        qo: Requant,
        weights: &'a [u8],
        bias: &'a [u8],
    },
    KpuUpload {
        input: MemRange,
        output: MemRange,
        in_shape: Shape,
    },
    KpuConv2d {
        main_out: Option<MemRange>,
        batches: u32,
        conv: KpuConv<'a>,
    },
}

/// A validated V4 model.
#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    /// The bytes the model was parsed from (may continue past the model).
    pub bytes: &'a [u8],
    /// `target` (0 CPU, 1 K210).
    pub target: u32,
    /// The constants blob.
    pub constants: &'a [u8],
    /// `main_mem`.
    pub main_mem: u32,
    /// Number of nodes.
    pub nodes: u32,
    /// Number of inputs.
    pub inputs: u32,
    /// Number of outputs.
    pub outputs: u32,
    /// Offset of the node header table.
    pub node_headers: usize,
    /// Offset of the first body.
    pub body_start: usize,
    /// Where the model ends.
    pub end: usize,
    /// Memory the interpreter needs.
    pub req: Requirements,
    /// Input 0.
    pub input: IoInfo,
}

const HEADER: usize = 40;

impl<'a> Model<'a> {
    /// Parses and checks a V4 model.
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        Self::parse_with(bytes, |_, _| {})
    }

    /// Like [`Model::parse`], and calls `f` with each node once it is checked.
    pub fn parse_with(bytes: &'a [u8], mut f: impl FnMut(&Body<'a>, Node<'a>)) -> Result<Model<'a>, KmodelError> {
        let mut r = Reader::new(bytes, 0, Part::Header);
        let _ident = r.u32()?;
        let _version = r.u32()?;
        let _flags = r.u32()?;
        let target = r.u32()?;
        let constants = r.u32()?;
        let main_mem = r.u32()?;
        let nodes = r.u32()?;
        let inputs = r.u32()?;
        let outputs = r.u32()?;
        let _reserved0 = r.u32()?;
        if target > 1 {
            return Err(KmodelError::BadTarget { target });
        }
        let file = bytes.len();
        let fits = |count: u32, item: usize, from: usize| table_end(count, item, from, file);
        let in_at = HEADER;
        let shapes_at = fits(inputs, 16, in_at).ok_or(KmodelError::BadCount { part: Part::Inputs, count: inputs })?;
        let out_at = fits(inputs, 16, shapes_at).ok_or(KmodelError::BadCount { part: Part::Inputs, count: inputs })?;
        let const_at =
            fits(outputs, 16, out_at).ok_or(KmodelError::BadCount { part: Part::Outputs, count: outputs })?;
        let headers_at = fits(constants, 1, const_at).ok_or(KmodelError::Truncated {
            part: Part::Constants,
            offset: const_at as u64,
            needed: constants as u64,
            available: (file - const_at) as u64,
        })?;
        let body_start =
            fits(nodes, 8, headers_at).ok_or(KmodelError::BadCount { part: Part::LayerHeaders, count: nodes })?;
        if nodes == 0 {
            return Err(KmodelError::Empty { part: Part::LayerHeaders });
        }
        if inputs == 0 {
            return Err(KmodelError::Empty { part: Part::Inputs });
        }
        if outputs == 0 {
            return Err(KmodelError::Empty { part: Part::Outputs });
        }
        let mut m = Model {
            bytes,
            target,
            constants: &bytes[const_at..headers_at],
            main_mem,
            nodes,
            inputs,
            outputs,
            node_headers: headers_at,
            body_start,
            end: body_start,
            req: Requirements { main: main_mem as u64, kpu: 0, scratch: 0, macs: 0 },
            input: IoInfo { dtype: DataType::U8, shape: [0; 4], bytes: 0 },
        };
        let mut ck = Checker { consts: constants as u64, main: main_mem as u64, req: m.req, index: u32::MAX };
        // Input 0 (nncase runs input 0 only).
        let in0 = range(&mut Reader::new(&bytes[in_at..in_at + 16], in_at, Part::Inputs))?;
        let mut sr = Reader::new(&bytes[shapes_at..shapes_at + 16], shapes_at, Part::Inputs);
        let in_shape = shape(&mut sr, u32::MAX)?;
        ck.write(&in0)?;
        let elem = in0.dtype.bytes() as u64;
        m.input = match in0.pool {
            Pool::Main => {
                if numel(&in_shape).saturating_mul(elem) != in0.size as u64 {
                    return Err(KmodelError::Invalid {
                        index: u32::MAX,
                        what: "input shape does not match its main-memory range",
                    });
                }
                IoInfo { dtype: in0.dtype, shape: in_shape, bytes: in0.size as u64 }
            }
            Pool::Kpu => {
                if in0.dtype != DataType::U8 || in_shape[3] == 0 {
                    return Err(KmodelError::Invalid {
                        index: u32::MAX,
                        what: "a KPU input must be u8 with a non-zero width",
                    });
                }
                let n = kpu::map_bytes(in_shape[3], in_shape[2], in_shape[1].max(1)).saturating_mul(in_shape[0] as u64);
                ck.kpu_bytes(in0.start as u64, n.max(numel(&in_shape)))?;
                IoInfo { dtype: DataType::U8, shape: in_shape, bytes: numel(&in_shape) }
            }
            _ => return Err(KmodelError::Invalid { index: u32::MAX, what: "input 0 is in the constants pool" }),
        };
        for i in 0..outputs {
            let o = out_at + i as usize * 16;
            let r = range(&mut Reader::new(&bytes[o..o + 16], o, Part::Outputs))?;
            ck.read(&r)?;
        }
        let mut bodies = m.bodies();
        for b in bodies.by_ref() {
            let b = b?;
            let node = m.decode(&b)?;
            ck.index = b.index;
            ck.node(&node)?;
            f(&b, node);
        }
        m.req = ck.req;
        m.end = bodies.end();
        Ok(m)
    }

    /// The node bodies, in order.
    pub fn bodies(&self) -> Bodies<'a> {
        Bodies::new(self.bytes, self.node_headers, self.nodes, self.body_start)
    }

    /// Decodes the node of `body` (one of [`Model::bodies`]).
    pub fn decode(&self, body: &Body<'a>) -> Result<Node<'a>, KmodelError> {
        decode(body.kind, body.bytes, body.at, body.index)
    }

    /// Node `i`'s header: (opcode, body size).
    pub fn node_header(&self, i: u32) -> (u32, u32) {
        let o = self.node_headers + i as usize * 8;
        (u32_at(self.bytes, o), u32_at(self.bytes, o + 4))
    }

    /// Input `i`'s memory range and shape (only input 0 is used when running).
    pub fn input_range(&self, i: u32) -> Option<(MemRange, [i32; 4])> {
        if i >= self.inputs {
            return None;
        }
        let o = HEADER + i as usize * 16;
        let r = range(&mut Reader::new(&self.bytes[o..o + 16], o, Part::Inputs)).ok()?;
        let s = HEADER + self.inputs as usize * 16 + i as usize * 16;
        let sh = core::array::from_fn(|d| u32_at(self.bytes, s + d * 4) as i32);
        Some((r, sh))
    }

    /// Output `i`'s memory range.
    pub fn output_range(&self, i: u32) -> Option<MemRange> {
        if i >= self.outputs {
            return None;
        }
        let o = HEADER + self.inputs as usize * 32 + i as usize * 16;
        range(&mut Reader::new(&self.bytes[o..o + 16], o, Part::Outputs)).ok()
    }
}

/// The (memory range, dimension) of each input of a `concat` node, from its two tables.
pub(crate) fn concat_parts<'a>(
    inputs: &'a [u8],
    dims: &'a [u8],
) -> impl Iterator<Item = Result<(MemRange, u32), KmodelError>> + 'a {
    let part = |(i, d): (&[u8], &[u8])| Ok((range(&mut Reader::new(i, 0, Part::Body))?, u32_at(d, 0)));
    inputs.chunks_exact(16).zip(dims.chunks_exact(4)).map(part)
}

fn range(r: &mut Reader<'_>) -> Result<MemRange, KmodelError> {
    let ty = r.u32()?;
    let dt = r.u32()?;
    let start = r.u32()?;
    let size = r.u32()?;
    let pool = match ty {
        0 => Pool::Constants,
        1 => Pool::Main,
        2 => Pool::Kpu,
        _ => {
            return Err(KmodelError::Invalid {
                index: u32::MAX,
                what: "memory_type must be 0 (const), 1 (main) or 2 (kpu)",
            });
        }
    };
    let dtype = match dt {
        0 => DataType::F32,
        1 => DataType::U8,
        _ => return Err(KmodelError::Invalid { index: u32::MAX, what: "datatype must be 0 (f32) or 1 (u8)" }),
    };
    Ok(MemRange { pool, dtype, start, size })
}

/// Largest tensor dimension a V4 model may declare.
const MAX_DIM: i32 = 1 << 24;

fn shape(r: &mut Reader<'_>, index: u32) -> Result<Shape, KmodelError> {
    let mut s = [0u32; 4];
    for d in &mut s {
        let v = r.i32()?;
        if v < 0 {
            return Err(KmodelError::Invalid { index, what: "negative dimension" });
        }
        // Far above any K210 tensor (8 MiB of RAM). The kernels index in i64/usize: positions
        // up to 2^24 times strides up to 4096 stay far inside it.
        if v > MAX_DIM {
            return Err(KmodelError::Invalid { index, what: "dimension above 2^24" });
        }
        *d = v as u32;
    }
    Ok(s)
}

fn ivec(r: &mut Reader<'_>) -> Result<[i32; 4], KmodelError> {
    Ok([r.i32()?, r.i32()?, r.i32()?, r.i32()?])
}

fn padding(r: &mut Reader<'_>) -> Result<Padding, KmodelError> {
    Ok(Padding { before: r.i32()?, after: r.i32()? })
}

fn clamp(r: &mut Reader<'_>) -> Result<Clamp, KmodelError> {
    Ok(Clamp { min: r.f32()?, max: r.f32()? })
}

fn requant(r: &mut Reader<'_>) -> Result<Requant, KmodelError> {
    let offset = r.i32()?;
    let mul = r.i32()?;
    let shift = r.i32()? as u8;
    Ok(Requant { offset, mul, shift })
}

/// Decodes one node body (`body` starts at model offset `at`).
pub fn decode(opcode: u32, body: &[u8], at: usize, index: u32) -> Result<Node<'_>, KmodelError> {
    let mut r = Reader::new(body, at, Part::Body);
    let res = decode_inner(opcode, &mut r, index);
    match res {
        Err(KmodelError::Truncated { offset, needed, .. }) => {
            Err(KmodelError::BodyTooSmall { index, needed: offset - at as u64 + needed, size: body.len() as u64 })
        }
        Err(KmodelError::Invalid { index: u32::MAX, what }) => Err(KmodelError::Invalid { index, what }),
        other => other,
    }
}

fn span<'a>(r: &mut Reader<'a>, count: u64, elem: u64) -> Result<&'a [u8], KmodelError> {
    let n = count.checked_mul(elem).filter(|&n| n <= r.remaining() as u64);
    match n {
        Some(n) => r.bytes(n as usize),
        None => r.bytes(usize::MAX / 2),
    }
}

fn window(r: &mut Reader<'_>) -> Result<Window, KmodelError> {
    let pad_h = padding(r)?;
    let pad_w = padding(r)?;
    let filter = (r.i32()?, r.i32()?);
    let stride = (r.i32()?, r.i32()?);
    let dilation = (r.i32()?, r.i32()?);
    Ok(Window { pad_h, pad_w, filter, stride, dilation })
}

fn decode_inner<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    use op::*;
    Ok(match opcode {
        BINARY | QUANTIZED_BINARY => {
            let (a, b, output) = (range(r)?, range(r)?, range(r)?);
            let opv = r.u32()?;
            let (a_shape, b_shape, out_shape) = (shape(r, index)?, shape(r, index)?, shape(r, index)?);
            if opv > 5 {
                return Err(KmodelError::Invalid { index, what: "binary op must be 0..=5" });
            }
            if opcode == BINARY {
                Node::Binary { a, b, output, op: opv, a_shape, b_shape, out_shape, act: clamp(r)? }
            } else {
                let (qa, qb) = (requant(r)?, requant(r)?);
                let offset = r.i32()?;
                let mul = r.i32()?;
                let shift = r.i32()? as u8;
                Node::QuantizedBinary {
                    a,
                    b,
                    output,
                    op: opv,
                    a_shape,
                    b_shape,
                    out_shape,
                    qa,
                    qb,
                    qo: Requant { offset, mul, shift },
                }
            }
        }
        CONCAT => {
            let output = range(r)?;
            let (inner, outer, n) = (r.u32()?, r.u32()?, r.u32()?);
            let inputs = span(r, n as u64, 16)?;
            let dims = span(r, n as u64, 4)?;
            Node::Concat { output, inner, outer, inputs, dims }
        }
        CONV2D | QUANTIZED_CONV2D => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let (groups, oc) = (r.u32()?, r.u32()?);
            let win = window(r)?;
            if groups == 0 || in_shape[1] % groups != 0 || oc % groups != 0 {
                return Err(KmodelError::Invalid { index, what: "groups must divide the input and output channels" });
            }
            let wn = prod(&[
                oc as u64,
                (in_shape[1] / groups) as u64,
                win.filter.0.max(0) as u64,
                win.filter.1.max(0) as u64,
            ]);
            if opcode == CONV2D {
                let act = clamp(r)?;
                let weights = span(r, wn, 4)?;
                let bias = span(r, oc as u64, 4)?;
                Node::Conv2d { input, output, in_shape, groups, out_channels: oc, win, act, weights, bias }
            } else {
                let input_offset = r.i32()?;
                let filter_offset = r.i32()?;
                let mul = r.i32()?;
                let shift = r.i32()? as u8;
                let offset = r.i32()?;
                let bias = span(r, oc as u64, 4)?;
                let weights = span(r, wn, 1)?;
                Node::QuantizedConv2d {
                    input,
                    output,
                    in_shape,
                    groups,
                    out_channels: oc,
                    win,
                    input_offset,
                    filter_offset,
                    qo: Requant { offset, mul, shift },
                    bias,
                    weights,
                }
            }
        }
        CONV2D_TRANSPOSE => {
            let (input, output) = (range(r)?, range(r)?);
            let (in_shape, out_shape) = (shape(r, index)?, shape(r, index)?);
            let groups = r.u32()?;
            let win = window(r)?;
            let act = clamp(r)?;
            if groups == 0 || in_shape[1] % groups != 0 || out_shape[1] % groups != 0 {
                return Err(KmodelError::Invalid { index, what: "groups must divide the input and output channels" });
            }
            let wn = prod(&[
                out_shape[1] as u64,
                (in_shape[1] / groups) as u64,
                win.filter.0.max(0) as u64,
                win.filter.1.max(0) as u64,
            ]);
            let weights = span(r, wn, 4)?;
            let bias = span(r, out_shape[1] as u64, 4)?;
            Node::Conv2dTranspose { input, output, in_shape, out_shape, groups, win, act, weights, bias }
        }
        DEQUANTIZE | QUANTIZE => {
            let (input, output) = (range(r)?, range(r)?);
            let (zero_point, scale) = (r.i32()?, r.f32()?);
            if opcode == DEQUANTIZE {
                Node::Dequantize { input, output, zero_point, scale }
            } else {
                Node::Quantize { input, output, zero_point, scale }
            }
        }
        MATMUL => {
            let (a, b, output) = (range(r)?, range(r)?, range(r)?);
            let (a_rows, a_cols, b_cols) = (r.u32()?, r.u32()?, r.u32()?);
            let act = clamp(r)?;
            let bias = span(r, b_cols as u64, 4)?;
            Node::MatMul { a, b, output, a_rows, a_cols, b_cols, act, bias }
        }
        QUANTIZED_MATMUL => {
            let (a, b, output) = (range(r)?, range(r)?, range(r)?);
            let (a_rows, a_cols, b_cols) = (r.u32()?, r.u32()?, r.u32()?);
            let (a_offset, b_offset) = (r.i32()?, r.i32()?);
            let mul = r.i32()?;
            let shift = r.i32()? as u8;
            let offset = r.i32()?;
            let bias = span(r, b_cols as u64, 4)?;
            Node::QuantizedMatMul {
                a,
                b,
                output,
                a_rows,
                a_cols,
                b_cols,
                a_offset,
                b_offset,
                qo: Requant { offset, mul, shift },
                bias,
            }
        }
        MEMORY_COPY => Node::MemoryCopy { input: range(r)?, output: range(r)? },
        PAD => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let paddings = [padding(r)?, padding(r)?, padding(r)?, padding(r)?];
            let _dt = r.u32()?;
            let v = r.bytes(4)?;
            Node::Pad { input, output, in_shape, paddings, value: [v[0], v[1], v[2], v[3]] }
        }
        REDUCE => {
            let (input, output) = (range(r)?, range(r)?);
            let opv = r.u32()?;
            let (in_shape, out_shape) = (shape(r, index)?, shape(r, index)?);
            let init = r.f32()?;
            if opv > 3 {
                return Err(KmodelError::Invalid { index, what: "reduce op must be 0..=3" });
            }
            Node::Reduce { input, output, op: opv, in_shape, out_shape, init }
        }
        REDUCE_WINDOW2D | CPU_REDUCE_WINDOW2D => {
            let (input, output) = (range(r)?, range(r)?);
            let opv = r.u32()?;
            let in_shape = shape(r, index)?;
            let win = window(r)?;
            let init = r.f32()?;
            let act = clamp(r)?;
            if opv > 3 {
                return Err(KmodelError::Invalid { index, what: "reduce op must be 0..=3" });
            }
            Node::ReduceWindow2d {
                input,
                output,
                op: opv,
                in_shape,
                win,
                init,
                act,
                nhwc: opcode == CPU_REDUCE_WINDOW2D,
            }
        }
        RESIZE_IMAGE => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let (out_h, out_w, mode) = (r.i32()?, r.i32()?, r.u32()?);
            let align = r.u8()?;
            if out_h <= 0 || out_w <= 0 || mode > 1 {
                return Err(KmodelError::Invalid {
                    index,
                    what: "resize: output size must be positive and mode 0 or 1",
                });
            }
            Node::ResizeImage {
                input,
                output,
                in_shape,
                out_h: out_h as u32,
                out_w: out_w as u32,
                bilinear: mode == 0,
                align_corners: align != 0,
            }
        }
        SOFTMAX => {
            let (input, output) = (range(r)?, range(r)?);
            Node::Softmax { input, output, inner: r.u32()?, outer: r.u32()?, beta: r.f32()? }
        }
        TRANSPOSE => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let perm = shape(r, index)?;
            let mut seen = [false; 4];
            for &p in &perm {
                if p > 3 || seen[p as usize] {
                    return Err(KmodelError::Invalid { index, what: "transpose perm is not a permutation of 0..4" });
                }
                seen[p as usize] = true;
            }
            Node::Transpose { input, output, in_shape, perm }
        }
        STRIDED_SLICE => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let (begin, end, strides) = (ivec(r)?, ivec(r)?, ivec(r)?);
            Node::StridedSlice { input, output, in_shape, begin, end, strides }
        }
        UNARY => {
            let (input, output) = (range(r)?, range(r)?);
            let opv = r.u32()?;
            if opv > 9 {
                return Err(KmodelError::Invalid { index, what: "unary op must be 0..=9" });
            }
            Node::Unary { input, output, op: opv }
        }
        NNIL_UNARY_METHOD => {
            let (input, output) = (range(r)?, range(r)?);
            let program = r.bytes(r.remaining())?;
            super::ops_v4::check_nnil(program).map_err(|what| KmodelError::Invalid { index, what })?;
            Node::NnilUnary { input, output, program }
        }
        TABLE_LOOKUP1D => Node::TableLookup1d { input: range(r)?, table: range(r)?, output: range(r)? },
        CPU_CONV2D | CPU_QUANTIZED_CONV2D | CPU_DEPTHWISE_CONV2D | CPU_QUANTIZED_DEPTHWISE_CONV2D => {
            let depthwise = matches!(opcode, CPU_DEPTHWISE_CONV2D | CPU_QUANTIZED_DEPTHWISE_CONV2D);
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let oc = if depthwise { in_shape[3] } else { r.u32()? };
            let win = window(r)?;
            let k = win.filter.0.max(0) as u64 * win.filter.1.max(0) as u64;
            let wn = if depthwise { prod(&[in_shape[3] as u64, k]) } else { prod(&[oc as u64, in_shape[3] as u64, k]) };
            if matches!(opcode, CPU_CONV2D | CPU_DEPTHWISE_CONV2D) {
                let act = clamp(r)?;
                let weights = span(r, wn, 4)?;
                let bias = span(r, oc as u64, 4)?;
                Node::CpuConv2d { input, output, in_shape, out_channels: oc, depthwise, win, act, weights, bias }
            } else {
                let input_offset = r.i32()?;
                let filter_offset = r.i32()?;
                let mul = r.i32()?;
                let shift = r.i32()? as u8;
                let offset = r.i32()?;
                let weights = span(r, wn, 1)?;
                let bias = span(r, oc as u64, 4)?;
                Node::CpuQuantizedConv2d {
                    input,
                    output,
                    in_shape,
                    out_channels: oc,
                    depthwise,
                    win,
                    input_offset,
                    filter_offset,
                    qo: Requant { offset, mul, shift },
                    weights,
                    bias,
                }
            }
        }
        KPU_UPLOAD => Node::KpuUpload { input: range(r)?, output: range(r)?, in_shape: shape(r, index)? },
        KPU_CONV2D => {
            let main_out = range(r)?;
            let batches = r.i32()?;
            let _reserved = r.i32()?;
            let regs = r.bytes(96)?;
            let layer = KpuLayer::decode(regs, index)?;
            if batches <= 0 {
                return Err(KmodelError::Invalid { index, what: "kpu_conv2d batches must be positive" });
            }
            let mut block = |skip: u32, len: u64, block: Block| -> Result<&'a [u8], KmodelError> {
                let off = r.pos() as u64 + skip as u64;
                if off + len > (r.pos() + r.remaining()) as u64 {
                    return Err(KmodelError::BlockOutOfBounds { index, block, offset: off });
                }
                r.skip(skip as usize)?;
                r.bytes(len as usize)
            };
            let bn = block(layer.bwsx_base_addr, 8 * layer.out_c as u64, Block::BatchNorm)?;
            let act = block(layer.active_addr, 144, Block::Activation)?;
            let weights = block(layer.para_start_addr, layer.weight_bytes() as u64, Block::Weights)?;
            Node::KpuConv2d {
                main_out: (main_out.size != 0).then_some(main_out),
                batches: batches as u32,
                conv: KpuConv { layer, bn, act, weights },
            }
        }
        _ => return Err(KmodelError::UnsupportedLayer { index, kind: opcode }),
    })
}

/// Checks memory ranges against their pools and element counts against the ranges.
struct Checker {
    consts: u64,
    main: u64,
    req: Requirements,
    index: u32,
}

impl Checker {
    fn inv(&self, what: &'static str) -> KmodelError {
        KmodelError::Invalid { index: self.index, what }
    }

    fn fit(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        let end = r.start as u64 + r.size as u64;
        let limit = match r.pool {
            Pool::Constants => self.consts,
            Pool::Main => self.main,
            _ => KPU_RAM_BYTES as u64,
        };
        if end > limit {
            return Err(KmodelError::OutOfRange { index: self.index, pool: r.pool, end, limit });
        }
        if r.pool == Pool::Kpu {
            self.req.kpu = self.req.kpu.max(end);
        }
        Ok(())
    }

    fn kpu_bytes(&mut self, start: u64, n: u64) -> Result<(), KmodelError> {
        let end = start.saturating_add(n);
        if end > KPU_RAM_BYTES as u64 {
            return Err(KmodelError::OutOfRange {
                index: self.index,
                pool: Pool::Kpu,
                end,
                limit: KPU_RAM_BYTES as u64,
            });
        }
        self.req.kpu = self.req.kpu.max(end);
        Ok(())
    }

    fn read(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        self.fit(r)
    }

    fn write(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        if r.pool == Pool::Constants && r.size != 0 {
            return Err(self.inv("an output range is in the read-only constants pool"));
        }
        self.fit(r)
    }

    /// `r` holds at least `n` elements of `elem` bytes.
    fn holds(&self, r: &MemRange, n: u64, elem: u64) -> Result<(), KmodelError> {
        if n.saturating_mul(elem) > r.size as u64 {
            return Err(self.inv("a memory range is smaller than its shape or count"));
        }
        Ok(())
    }

    /// A convolution's ranges: `hw` are the input's spatial dimensions (NCHW or NHWC), `elem`
    /// the element size of input and output.
    #[allow(clippy::too_many_arguments)]
    fn conv(
        &mut self,
        input: &MemRange,
        output: &MemRange,
        in_shape: &Shape,
        out_channels: u32,
        win: &Window,
        hw: (u32, u32),
        elem: u64,
    ) -> Result<(), KmodelError> {
        self.read(input)?;
        self.write(output)?;
        self.holds(input, numel(in_shape), elem)?;
        let (oh, ow) = self.window_out(hw.0, hw.1, win)?;
        self.holds(output, prod(&[in_shape[0] as u64, out_channels as u64, oh, ow]), elem)
    }

    fn requant(&self, q: &Requant) -> Result<(), KmodelError> {
        if q.shift > 63 {
            return Err(self.inv("requantisation shift above 63"));
        }
        Ok(())
    }

    fn elem(&self, r: &MemRange) -> u64 {
        r.dtype.bytes() as u64
    }

    fn window_out(&self, h: u32, w: u32, win: &Window) -> Result<(u64, u64), KmodelError> {
        const MAX: i32 = 1 << 12;
        let pos = |v: i32| (1..=MAX).contains(&v);
        if !(pos(win.filter.0)
            && pos(win.filter.1)
            && pos(win.stride.0)
            && pos(win.stride.1)
            && pos(win.dilation.0)
            && pos(win.dilation.1))
        {
            return Err(self.inv("filter, stride and dilation must be in 1..=4096"));
        }
        for p in [win.pad_h.before, win.pad_h.after, win.pad_w.before, win.pad_w.after] {
            if !(-MAX..=MAX).contains(&p) {
                return Err(self.inv("window padding must be in -4096..=4096"));
            }
        }
        let (oh, ow) = win.out_hw(h, w);
        Ok((oh.max(0) as u64, ow.max(0) as u64))
    }

    fn node(&mut self, n: &Node<'_>) -> Result<(), KmodelError> {
        match *n {
            Node::Binary { a, b, output, a_shape, b_shape, out_shape, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, numel(&a_shape), 4)?;
                self.holds(&b, numel(&b_shape), 4)?;
                let on = if a_shape == b_shape { numel(&a_shape) } else { numel(&out_shape) };
                self.holds(&output, on, 4)?;
                self.broadcast(&a_shape, &b_shape, &out_shape)?;
            }
            Node::QuantizedBinary { a, b, output, a_shape, b_shape, out_shape, qa, qb, qo, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, numel(&a_shape), 1)?;
                self.holds(&b, numel(&b_shape), 1)?;
                let on = if a_shape == b_shape { numel(&a_shape) } else { numel(&out_shape) };
                self.holds(&output, on, 1)?;
                self.broadcast(&a_shape, &b_shape, &out_shape)?;
                for q in [qa, qb, qo] {
                    self.requant(&q)?;
                }
            }
            Node::Concat { output, inner, outer, inputs, dims } => {
                self.write(&output)?;
                let mut total = 0u64;
                for part in concat_parts(inputs, dims) {
                    let (ir, dim) = part?;
                    self.read(&ir)?;
                    let dim = dim as i32;
                    if dim < 0 {
                        return Err(self.inv("negative concat dimension"));
                    }
                    let size = (inner as u64).saturating_mul(dim as u64);
                    self.holds(&ir, size.saturating_mul(outer as u64), 1)?;
                    total = total.saturating_add(size);
                }
                self.holds(&output, total.saturating_mul(outer as u64), 1)?;
            }
            Node::Conv2d { input, output, in_shape, out_channels, win, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[2], in_shape[3]), 4)?;
            }
            Node::QuantizedConv2d { input, output, in_shape, out_channels, win, qo, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[2], in_shape[3]), 1)?;
                self.requant(&qo)?;
            }
            Node::Conv2dTranspose { input, output, in_shape, out_shape, win, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.window_out(1, 1, &win)?;
                self.holds(&input, numel(&in_shape), 4)?;
                self.holds(&output, numel(&out_shape), 4)?;
                if out_shape[0] < in_shape[0] {
                    return Err(self.inv("conv2d_transpose output has fewer batches than its input"));
                }
            }
            Node::Dequantize { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64, 4)?;
            }
            Node::Quantize { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 1)?;
            }
            Node::MatMul { a, b, output, a_rows, a_cols, b_cols, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, a_rows as u64 * a_cols as u64, 4)?;
                self.holds(&b, a_cols as u64 * b_cols as u64, 4)?;
                self.holds(&output, a_rows as u64 * b_cols as u64, 4)?;
            }
            Node::QuantizedMatMul { a, b, output, a_rows, a_cols, b_cols, qo, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, a_rows as u64 * a_cols as u64, 1)?;
                self.holds(&b, a_cols as u64 * b_cols as u64, 1)?;
                self.holds(&output, a_rows as u64 * b_cols as u64, 1)?;
                self.requant(&qo)?;
            }
            Node::MemoryCopy { input, output } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 4)?;
            }
            Node::Pad { input, output, in_shape, paddings, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                let mut on = 1u64;
                for (d, p) in in_shape.iter().zip(paddings) {
                    let o = *d as i64 + p.before as i64 + p.after as i64;
                    if o < 0 || (p.before as i64) < -(*d as i64) || (p.after as i64) < -(*d as i64) {
                        return Err(self.inv("padding crops more than the dimension"));
                    }
                    on = on.saturating_mul(o as u64);
                }
                self.holds(&output, on, e)?;
            }
            Node::Reduce { input, output, in_shape, out_shape, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&input, numel(&in_shape), 4)?;
                self.holds(&output, numel(&out_shape), 4)?;
                if numel(&in_shape) > 0 && out_shape.contains(&0) {
                    return Err(self.inv("reduce output shape has a zero dimension"));
                }
                if input.size < 4 {
                    return Err(self.inv("reduce input range is empty"));
                }
            }
            Node::ReduceWindow2d { input, output, in_shape, win, nhwc, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&input, numel(&in_shape), 4)?;
                let (h, w, c) = if nhwc {
                    (in_shape[1], in_shape[2], in_shape[3])
                } else {
                    (in_shape[2], in_shape[3], in_shape[1])
                };
                let (oh, ow) = self.window_out(h, w, &win)?;
                self.holds(&output, prod(&[in_shape[0] as u64, c as u64, oh, ow]), 4)?;
            }
            Node::ResizeImage { input, output, in_shape, out_h, out_w, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                if in_shape[2] == 0 || in_shape[3] == 0 {
                    return Err(self.inv("resize input has a zero height or width"));
                }
                self.holds(&input, numel(&in_shape), e)?;
                self.holds(&output, prod(&[in_shape[0] as u64, in_shape[1] as u64, out_h as u64, out_w as u64]), e)?;
            }
            Node::Softmax { input, output, inner, outer, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                if inner == 0 {
                    return Err(self.inv("softmax inner size is 0"));
                }
                self.holds(&input, inner as u64 * outer as u64, 4)?;
                self.holds(&output, inner as u64 * outer as u64, 4)?;
            }
            Node::Transpose { input, output, in_shape, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                self.holds(&output, numel(&in_shape), e)?;
            }
            Node::StridedSlice { input, output, in_shape, begin, end, strides } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                let mut on = 1u64;
                for d in 0..4 {
                    let n = slice_len(begin[d], end[d], strides[d]).ok_or(self.inv("strided_slice stride is 0"))?;
                    if n > 0 {
                        let last = begin[d] as i64 + (n as i64 - 1) * strides[d] as i64;
                        let dim = in_shape[d] as i64;
                        if begin[d] < 0 || (begin[d] as i64) >= dim || last < 0 || last >= dim {
                            return Err(self.inv("strided_slice reads outside its input shape"));
                        }
                    }
                    on = on.saturating_mul(n);
                }
                self.holds(&output, on, e)?;
            }
            Node::Unary { input, output, .. } | Node::NnilUnary { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 4)?;
            }
            Node::TableLookup1d { input, table, output } => {
                self.read(&input)?;
                self.read(&table)?;
                self.write(&output)?;
                self.holds(&table, 256, 1)?;
                self.holds(&output, input.size as u64, 1)?;
            }
            Node::CpuConv2d { input, output, in_shape, out_channels, win, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[1], in_shape[2]), 4)?;
            }
            Node::CpuQuantizedConv2d { input, output, in_shape, out_channels, win, qo, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[1], in_shape[2]), 1)?;
                self.requant(&qo)?;
            }
            Node::KpuUpload { input, output, in_shape } => {
                self.read(&input)?;
                self.write(&output)?;
                if output.pool != Pool::Kpu || in_shape[3] == 0 {
                    return Err(self.inv("kpu_upload must write KPU RAM from a map with a non-zero width"));
                }
                self.holds(&input, numel(&in_shape), 1)?;
                let n = kpu::map_bytes(in_shape[3], in_shape[2], in_shape[1].max(1)).saturating_mul(in_shape[0] as u64);
                self.kpu_bytes(output.start as u64, n.max(numel(&in_shape)))?;
            }
            Node::KpuConv2d { main_out, batches, conv } => {
                let l = conv.layer;
                self.kpu_bytes(l.src_row as u64 * 64, l.in_map_bytes() * batches as u64)?;
                self.kpu_bytes(l.dst_row as u64 * 64, l.out_map_bytes() * batches as u64)?;
                if let Some(mo) = main_out {
                    if mo.pool != Pool::Main {
                        return Err(self.inv("kpu_conv2d main_mem_output is not in main memory"));
                    }
                    self.write(&mo)?;
                    self.holds(&mo, l.out_compact_bytes() * batches as u64, 1)?;
                }
                super::v3::check_act_shifts(self.index, conv.act)?;
                self.req.scratch = self.req.scratch.max(l.scratch_bytes());
                self.req.macs = self.req.macs.saturating_add(l.macs().saturating_mul(batches as u64));
            }
        }
        Ok(())
    }

    fn broadcast(&self, a: &Shape, b: &Shape, out: &Shape) -> Result<(), KmodelError> {
        if a == b {
            return Ok(());
        }
        // Inputs are indexed with `idx[d] >= shape[d] ? 0 : idx[d]`: any non-zero size is
        // safe, a zero-sized axis under a non-empty output is not.
        for d in 0..4 {
            if out[d] != 0 && (a[d] == 0 || b[d] == 0) {
                return Err(self.inv("binary input shape has a zero axis under a non-empty output"));
            }
        }
        Ok(())
    }
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
