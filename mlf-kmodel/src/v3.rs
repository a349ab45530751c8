//! kmodel V3 (nncase v0.1): header, output table, layer headers and every layer body the
//! Kendryte SDK defines, parsed once and checked (docs/kmodel.md §2, §9).

use super::error::{Block, KmodelError, Part, Pool};
use super::kpu::{self, KPU_RAM_BYTES, KpuConv, KpuLayer};
use super::reader::{Bodies, Body, Reader, table_end, u32_at};
use super::{DataType, IoInfo, Requirements};

/// Layer type numbers (`kpu_model_layer_type_t`).
pub mod kind {
    #![allow(missing_docs)]
    pub const ADD: u32 = 1;
    pub const QUANTIZED_ADD: u32 = 2;
    pub const GLOBAL_MAX_POOL2D: u32 = 3;
    pub const QUANTIZED_GLOBAL_MAX_POOL2D: u32 = 4;
    pub const GLOBAL_AVERAGE_POOL2D: u32 = 5;
    pub const QUANTIZED_GLOBAL_AVERAGE_POOL2D: u32 = 6;
    pub const MAX_POOL2D: u32 = 7;
    pub const QUANTIZED_MAX_POOL2D: u32 = 8;
    pub const AVERAGE_POOL2D: u32 = 9;
    pub const QUANTIZED_AVERAGE_POOL2D: u32 = 10;
    pub const QUANTIZE: u32 = 11;
    pub const DEQUANTIZE: u32 = 12;
    pub const REQUANTIZE: u32 = 13;
    pub const L2_NORMALIZATION: u32 = 14;
    pub const SOFTMAX: u32 = 15;
    pub const CONCAT: u32 = 16;
    pub const QUANTIZED_CONCAT: u32 = 17;
    pub const FULLY_CONNECTED: u32 = 18;
    pub const QUANTIZED_FULLY_CONNECTED: u32 = 19;
    pub const TENSORFLOW_FLATTEN: u32 = 20;
    pub const QUANTIZED_TENSORFLOW_FLATTEN: u32 = 21;
    pub const RESIZE_NEAREST_NEIGHBOR: u32 = 22;
    pub const QUANTIZED_RESIZE_NEAREST_NEIGHBOR: u32 = 23;
    pub const CHANNELWISE_DEQUANTIZE: u32 = 24;
    pub const LOGISTIC: u32 = 25;
    pub const K210_CONV: u32 = 10240;
    pub const K210_ADD_PADDING: u32 = 10241;
    pub const K210_REMOVE_PADDING: u32 = 10242;
    pub const K210_UPLOAD: u32 = 10243;
}

/// The SDK name of a V3 layer type (`"K210_CONV"`, …), or `None` for unknown types.
pub fn kind_name(k: u32) -> Option<&'static str> {
    use kind::*;
    Some(match k {
        0 => "INVALID",
        ADD => "ADD",
        QUANTIZED_ADD => "QUANTIZED_ADD",
        GLOBAL_MAX_POOL2D => "GLOBAL_MAX_POOL2D",
        QUANTIZED_GLOBAL_MAX_POOL2D => "QUANTIZED_GLOBAL_MAX_POOL2D",
        GLOBAL_AVERAGE_POOL2D => "GLOBAL_AVERAGE_POOL2D",
        QUANTIZED_GLOBAL_AVERAGE_POOL2D => "QUANTIZED_GLOBAL_AVERAGE_POOL2D",
        MAX_POOL2D => "MAX_POOL2D",
        QUANTIZED_MAX_POOL2D => "QUANTIZED_MAX_POOL2D",
        AVERAGE_POOL2D => "AVERAGE_POOL2D",
        QUANTIZED_AVERAGE_POOL2D => "QUANTIZED_AVERAGE_POOL2D",
        QUANTIZE => "QUANTIZE",
        DEQUANTIZE => "DEQUANTIZE",
        REQUANTIZE => "REQUANTIZE",
        L2_NORMALIZATION => "L2_NORMALIZATION",
        SOFTMAX => "SOFTMAX",
        CONCAT => "CONCAT",
        QUANTIZED_CONCAT => "QUANTIZED_CONCAT",
        FULLY_CONNECTED => "FULLY_CONNECTED",
        QUANTIZED_FULLY_CONNECTED => "QUANTIZED_FULLY_CONNECTED",
        TENSORFLOW_FLATTEN => "TENSORFLOW_FLATTEN",
        QUANTIZED_TENSORFLOW_FLATTEN => "QUANTIZED_TENSORFLOW_FLATTEN",
        RESIZE_NEAREST_NEIGHBOR => "RESIZE_NEAREST_NEIGHBOR",
        QUANTIZED_RESIZE_NEAREST_NEIGHBOR => "QUANTIZED_RESIZE_NEAREST_NEIGHBOR",
        CHANNELWISE_DEQUANTIZE => "CHANNELWISE_DEQUANTIZE",
        LOGISTIC => "LOGISTIC",
        K210_CONV => "K210_CONV",
        K210_ADD_PADDING => "K210_ADD_PADDING",
        K210_REMOVE_PADDING => "K210_REMOVE_PADDING",
        K210_UPLOAD => "K210_UPLOAD",
        _ => return None,
    })
}

/// Width, height, channels (`kpu_model_shape_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Shape {
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
    /// Channels.
    pub c: u32,
}

impl Shape {
    /// Elements.
    pub fn numel(&self) -> u64 {
        (self.w as u64).saturating_mul(self.h as u64).saturating_mul(self.c as u64)
    }
}

/// Window parameters shared by `QUANTIZED_MAX_POOL2D` and `AVERAGE_POOL2D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    /// Input address (main memory).
    pub input: u32,
    /// Output address.
    pub output: u32,
    /// Input shape.
    pub in_shape: Shape,
    /// Output shape.
    pub out_shape: Shape,
    /// Kernel (w, h).
    pub kernel: (u32, u32),
    /// Stride (w, h).
    pub stride: (u32, u32),
    /// Padding (w, h).
    pub padding: (u32, u32),
}

/// A decoded V3 layer. Addresses are byte offsets into main memory unless named `*_row`
/// (64-byte KPU RAM rows).
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum Layer<'a> {
    /// f32 `out = a + b`.
    Add { a: u32, b: u32, output: u32, count: u32 },
    /// u8 quantised add (SDK `kpu_quantized_add`).
    QuantizedAdd {
        a: u32,
        b: u32,
        output: u32,
        count: u32,
        a_off: i32,
        a_mul: i32,
        a_shift: i32,
        b_off: i32,
        b_mul: i32,
        b_shift: i32,
        o_off: i32,
        o_mul: i32,
        o_shift: i32,
    },
    /// f32 mean over `kernel_size` values per channel.
    GlobalAveragePool2d { input: u32, output: u32, kernel_size: u32, channels: u32 },
    /// u8 max pool.
    QuantizedMaxPool2d(Pool2d),
    /// f32 average pool (`act` ignored, as in the SDK).
    AveragePool2d(Pool2d),
    /// f32 → u8.
    Quantize { input: u32, output: u32, count: u32, scale: f32, bias: f32 },
    /// u8 → f32.
    Dequantize { input: u32, output: u32, count: u32, scale: f32, bias: f32 },
    /// u8 table lookup.
    Requantize { input: u32, output: u32, count: u32, table: &'a [u8] },
    /// f32 L2 normalisation.
    L2Normalization { input: u32, output: u32, channels: u32 },
    /// f32 softmax.
    Softmax { input: u32, output: u32, channels: u32 },
    /// Byte concatenation of `{start, size}` ranges (`CONCAT` and `QUANTIZED_CONCAT`).
    Concat { output: u32, inputs: &'a [u8] },
    /// f32 dense layer; `act` 0 linear, 1 ReLU, 2 ReLU6.
    FullyConnected {
        input: u32,
        output: u32,
        in_channels: u32,
        out_channels: u32,
        act: u32,
        weights: &'a [u8],
        bias: &'a [u8],
    },
    /// NCHW → NHWC (f32).
    TfFlatten { input: u32, output: u32, shape: Shape },
    /// Nearest-neighbour resize, f32 or (`quantized`) u8.
    ResizeNearest { input: u32, output: u32, in_shape: Shape, out_w: u32, out_h: u32, quantized: bool },
    /// Per-channel u8 → f32.
    ChannelwiseDequantize { input: u32, output: u32, channels: u32, channel_size: u32, params: &'a [u8] },
    /// f32 sigmoid.
    Logistic { input: u32, output: u32, channels: u32 },
    /// A KPU convolution; `main_out` is the main-memory address of the compact u8 copy.
    K210Conv { main_out: Option<u32>, conv: KpuConv<'a> },
    /// Writes pixel (0,0) of `channels` 4×4 maps into KPU RAM.
    K210AddPadding { input: u32, kpu_row: u32, channels: u32 },
    /// Reads pixel (0,0) of `channels` compact 4×4 maps.
    K210RemovePadding { input: u32, output: u32, channels: u32 },
    /// Uploads a u8 W × H × C map from main memory into KPU RAM.
    K210Upload { input: u32, kpu_row: u32, shape: Shape },
}

/// The V3 header, with the output and layer tables checked to lie inside the file (no body
/// read): all a description of a model that cannot run needs.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// The bytes the header was read from (may continue past the model).
    pub bytes: &'a [u8],
    /// `flags` (bit 0: 8-bit weights).
    pub flags: u32,
    /// Number of layers.
    pub layers: u32,
    /// `max_start_address` (informational).
    pub max_start_address: u32,
    /// `main_mem_usage`.
    pub main_mem_usage: u32,
    /// Number of outputs.
    pub outputs: u32,
    /// Offset of the first body.
    pub body_start: usize,
}

/// A validated V3 model.
#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    /// Header and tables.
    pub header: Header<'a>,
    /// Where the model ends (the end of the last body, capped at the file length).
    pub end: usize,
    /// Memory the interpreter needs.
    pub req: Requirements,
    /// The input the first layer takes.
    pub input: IoInfo,
}

const HEADER: usize = 28;

impl<'a> Header<'a> {
    /// Reads the header and checks the architecture, the table sizes and that there is at least
    /// one layer and one output.
    pub fn read(bytes: &'a [u8]) -> Result<Header<'a>, KmodelError> {
        let mut r = Reader::new(bytes, 0, Part::Header);
        let version = r.u32()?;
        debug_assert_eq!(version, 3);
        let flags = r.u32()?;
        let arch = r.u32()?;
        let layers = r.u32()?;
        let max_start_address = r.u32()?;
        let main_mem_usage = r.u32()?;
        let outputs = r.u32()?;
        if arch != 0 {
            return Err(KmodelError::BadArch { arch });
        }
        let Some(headers_at) = table_end(outputs, 8, HEADER, bytes.len()) else {
            return Err(KmodelError::BadCount { part: Part::Outputs, count: outputs });
        };
        let Some(body_start) = table_end(layers, 8, headers_at, bytes.len()) else {
            return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: layers });
        };
        if layers == 0 {
            return Err(KmodelError::Empty { part: Part::LayerHeaders });
        }
        if outputs == 0 {
            return Err(KmodelError::Empty { part: Part::Outputs });
        }
        Ok(Header { bytes, flags, layers, max_start_address, main_mem_usage, outputs, body_start })
    }

    /// Main memory the interpreter gives the model: `main_mem_usage` rounded up to 8, plus 8
    /// bytes of DMA slack.
    pub fn main_bytes(&self) -> u64 {
        (self.main_mem_usage as u64).div_ceil(8) * 8 + 8
    }

    /// Output `i`: (main-memory address, size in bytes).
    pub fn output_range(&self, i: u32) -> (u32, u32) {
        let o = HEADER + i as usize * 8;
        (u32_at(self.bytes, o), u32_at(self.bytes, o + 4))
    }

    /// Layer `i`'s header: (type, body size).
    pub fn layer_header(&self, i: u32) -> (u32, u32) {
        let o = HEADER + self.outputs as usize * 8 + i as usize * 8;
        (u32_at(self.bytes, o), u32_at(self.bytes, o + 4))
    }

    /// The layer bodies, in order.
    pub fn bodies(&self) -> Bodies<'a> {
        Bodies::new(self.bytes, HEADER + self.outputs as usize * 8, self.layers, self.body_start)
    }
}

impl<'a> Model<'a> {
    /// Parses and checks a V3 model: header, tables, every body, every address.
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        Self::parse_with(bytes, |_, _| {})
    }

    /// Like [`Model::parse`], and calls `f` with each layer once it is checked.
    pub fn parse_with(bytes: &'a [u8], mut f: impl FnMut(&Body<'a>, Layer<'a>)) -> Result<Model<'a>, KmodelError> {
        let header = Header::read(bytes)?;
        if header.flags & 1 == 0 {
            return Err(KmodelError::SixteenBitWeights);
        }
        let main_limit = header.main_bytes();
        let mut m = Model {
            header,
            end: header.body_start,
            req: Requirements { main: main_limit, kpu: 0, scratch: 0, macs: 0 },
            input: IoInfo { dtype: DataType::U8, shape: [0; 4], bytes: 0 },
        };
        for i in 0..header.outputs {
            let (addr, size) = header.output_range(i);
            check_main(u32::MAX, addr, size as u64, main_limit)?;
        }
        let mut bodies = header.bodies();
        for b in bodies.by_ref() {
            let b = b?;
            if b.index == 0 && b.kind != kind::K210_CONV && b.kind != kind::FULLY_CONNECTED {
                return Err(KmodelError::FirstLayer { kind: b.kind });
            }
            let layer = decode(b.kind, b.bytes, b.at, bytes, b.index)?;
            check_layer(&layer, b.index, main_limit, &mut m.req)?;
            if b.index == 0 {
                m.input = match layer {
                    Layer::K210Conv { conv, .. } => {
                        let l = conv.layer;
                        IoInfo { dtype: DataType::U8, shape: [1, l.in_c, l.in_h, l.in_w], bytes: l.in_compact_bytes() }
                    }
                    Layer::FullyConnected { in_channels, .. } => {
                        IoInfo { dtype: DataType::F32, shape: [1, in_channels, 1, 1], bytes: in_channels as u64 * 4 }
                    }
                    _ => return Err(KmodelError::FirstLayer { kind: b.kind }),
                };
            }
            f(&b, layer);
        }
        m.end = bodies.end();
        Ok(m)
    }

    /// Decodes the layer of `body` (one of [`Header::bodies`]).
    pub fn decode(&self, body: &Body<'a>) -> Result<Layer<'a>, KmodelError> {
        decode(body.kind, body.bytes, body.at, self.header.bytes, body.index)
    }
}

fn check_main(index: u32, addr: u32, size: u64, limit: u64) -> Result<(), KmodelError> {
    let end = (addr as u64).saturating_add(size);
    if end > limit {
        return Err(KmodelError::OutOfRange { index, pool: Pool::Main, end, limit });
    }
    Ok(())
}

fn check_kpu(index: u32, row: u32, size: u64, req: &mut Requirements) -> Result<(), KmodelError> {
    let end = (row as u64 * 64).saturating_add(size);
    if end > KPU_RAM_BYTES as u64 {
        return Err(KmodelError::OutOfRange { index, pool: Pool::Kpu, end, limit: KPU_RAM_BYTES as u64 });
    }
    req.kpu = req.kpu.max(end);
    Ok(())
}

fn shape(r: &mut Reader<'_>) -> Result<Shape, KmodelError> {
    Ok(Shape { w: r.u32()?, h: r.u32()?, c: r.u32()? })
}

fn too_small(index: u32, needed: u64, body: &[u8]) -> KmodelError {
    KmodelError::BodyTooSmall { index, needed, size: body.len() as u64 }
}

/// Decodes one body (`body` starts at model offset `at`; `file` is the whole model for the
/// absolute offsets of `K210_CONV`). Checks that every field and array is inside the body and
/// every block inside the file.
pub fn decode<'a>(ty: u32, body: &'a [u8], at: usize, file: &'a [u8], index: u32) -> Result<Layer<'a>, KmodelError> {
    use kind::*;
    let mut r = Reader::new(body, at, Part::Body);
    let short = |e: KmodelError| match e {
        KmodelError::Truncated { offset, needed, .. } => too_small(index, offset - at as u64 + needed, body),
        e => e,
    };
    let read = |r: &mut Reader<'a>| -> Result<Layer<'a>, KmodelError> {
        let _flags = r.u32()?;
        Ok(match ty {
            ADD => Layer::Add { a: r.u32()?, b: r.u32()?, output: r.u32()?, count: r.u32()? },
            QUANTIZED_ADD => Layer::QuantizedAdd {
                a: r.u32()?,
                b: r.u32()?,
                output: r.u32()?,
                count: r.u32()?,
                a_off: r.i32()?,
                a_mul: r.i32()?,
                a_shift: r.i32()?,
                b_off: r.i32()?,
                b_mul: r.i32()?,
                b_shift: r.i32()?,
                o_off: r.i32()?,
                o_mul: r.i32()?,
                o_shift: r.i32()?,
            },
            GLOBAL_AVERAGE_POOL2D => Layer::GlobalAveragePool2d {
                input: r.u32()?,
                output: r.u32()?,
                kernel_size: r.u32()?,
                channels: r.u32()?,
            },
            QUANTIZED_MAX_POOL2D | AVERAGE_POOL2D => {
                let p = Pool2d {
                    input: r.u32()?,
                    output: r.u32()?,
                    in_shape: shape(r)?,
                    out_shape: shape(r)?,
                    kernel: (r.u32()?, r.u32()?),
                    stride: (r.u32()?, r.u32()?),
                    padding: (r.u32()?, r.u32()?),
                };
                if ty == AVERAGE_POOL2D {
                    let _act = r.u32()?;
                    Layer::AveragePool2d(p)
                } else {
                    Layer::QuantizedMaxPool2d(p)
                }
            }
            QUANTIZE => {
                Layer::Quantize { input: r.u32()?, output: r.u32()?, count: r.u32()?, scale: r.f32()?, bias: r.f32()? }
            }
            DEQUANTIZE => Layer::Dequantize {
                input: r.u32()?,
                output: r.u32()?,
                count: r.u32()?,
                scale: r.f32()?,
                bias: r.f32()?,
            },
            REQUANTIZE => {
                Layer::Requantize { input: r.u32()?, output: r.u32()?, count: r.u32()?, table: r.bytes(256)? }
            }
            L2_NORMALIZATION => Layer::L2Normalization { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
            SOFTMAX => Layer::Softmax { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
            LOGISTIC => Layer::Logistic { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
            CONCAT | QUANTIZED_CONCAT => {
                let output = r.u32()?;
                let n = r.u32()?;
                let len = (n as usize).checked_mul(8).ok_or(too_small(index, u64::MAX, body))?;
                Layer::Concat { output, inputs: r.bytes(len)? }
            }
            FULLY_CONNECTED => {
                let (input, output, ic, oc, act) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
                let wn = (ic as u64).saturating_mul(oc as u64).saturating_mul(4);
                let need = wn.saturating_add(oc as u64 * 4);
                if need > r.remaining() as u64 {
                    return Err(too_small(index, need.saturating_add(24), body));
                }
                let weights = r.bytes(wn as usize)?;
                let bias = r.bytes(oc as usize * 4)?;
                Layer::FullyConnected { input, output, in_channels: ic, out_channels: oc, act, weights, bias }
            }
            TENSORFLOW_FLATTEN => Layer::TfFlatten { input: r.u32()?, output: r.u32()?, shape: shape(r)? },
            RESIZE_NEAREST_NEIGHBOR | QUANTIZED_RESIZE_NEAREST_NEIGHBOR => {
                let l = Layer::ResizeNearest {
                    input: r.u32()?,
                    output: r.u32()?,
                    in_shape: shape(r)?,
                    out_w: r.u32()?,
                    out_h: r.u32()?,
                    quantized: ty == QUANTIZED_RESIZE_NEAREST_NEIGHBOR,
                };
                let _align_corners = r.u32()?;
                l
            }
            CHANNELWISE_DEQUANTIZE => {
                let (input, output, channels, channel_size) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
                let n = channels as u64 * 8;
                if n > r.remaining() as u64 {
                    return Err(too_small(index, 20 + n, body));
                }
                Layer::ChannelwiseDequantize { input, output, channels, channel_size, params: r.bytes(n as usize)? }
            }
            K210_CONV => {
                let main = r.u32()?;
                let (layer_off, w_off, bn_off, act_off) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
                let block = |off: u32, len: u64, block: Block| -> Result<&'a [u8], KmodelError> {
                    let end = off as u64 + len;
                    if end > file.len() as u64 {
                        return Err(KmodelError::BlockOutOfBounds { index, block, offset: off as u64 });
                    }
                    Ok(&file[off as usize..end as usize])
                };
                let regs = block(layer_off, 96, Block::Registers)?;
                let layer = KpuLayer::decode(regs, index)?;
                let conv = KpuConv {
                    layer,
                    bn: block(bn_off, 8 * layer.out_c as u64, Block::BatchNorm)?,
                    act: block(act_off, 144, Block::Activation)?,
                    weights: block(w_off, layer.weight_bytes() as u64, Block::Weights)?,
                };
                let flags = u32_at(body, 0);
                Layer::K210Conv { main_out: (flags & 1 != 0).then_some(main), conv }
            }
            K210_ADD_PADDING => Layer::K210AddPadding { input: r.u32()?, kpu_row: r.u32()?, channels: r.u32()? },
            K210_REMOVE_PADDING => Layer::K210RemovePadding { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
            K210_UPLOAD => Layer::K210Upload { input: r.u32()?, kpu_row: r.u32()?, shape: shape(r)? },
            _ => return Err(KmodelError::UnsupportedLayer { index, kind: ty }),
        })
    };
    let layer = read(&mut r).map_err(short)?;
    Ok(layer)
}

fn nonzero(index: u32, v: u32, what: &'static str) -> Result<(), KmodelError> {
    if v == 0 { Err(KmodelError::Invalid { index, what }) } else { Ok(()) }
}

/// Checks one layer's addresses against main memory and KPU RAM and its divisors, and updates
/// the memory requirements.
fn check_layer(l: &Layer<'_>, i: u32, main: u64, req: &mut Requirements) -> Result<(), KmodelError> {
    let m = |addr: u32, size: u64| check_main(i, addr, size, main);
    match *l {
        Layer::Add { a, b, output, count } => {
            let n = count as u64 * 4;
            m(a, n)?;
            m(b, n)?;
            m(output, n)?;
        }
        Layer::QuantizedAdd { a, b, output, count, a_shift, b_shift, o_shift, .. } => {
            m(a, count as u64)?;
            m(b, count as u64)?;
            m(output, count as u64)?;
            for s in [a_shift, b_shift, o_shift] {
                if !(0..=63).contains(&s) {
                    return Err(KmodelError::Invalid { index: i, what: "quantized add shift outside 0..=63" });
                }
            }
        }
        Layer::GlobalAveragePool2d { input, output, kernel_size, channels } => {
            nonzero(i, kernel_size, "kernel_size is 0")?;
            m(input, (kernel_size as u64).saturating_mul(channels as u64).saturating_mul(4))?;
            m(output, channels as u64 * 4)?;
        }
        Layer::QuantizedMaxPool2d(p) | Layer::AveragePool2d(p) => {
            let e = if matches!(l, Layer::AveragePool2d(_)) { 4 } else { 1 };
            nonzero(i, p.stride.0, "stride_width is 0")?;
            nonzero(i, p.stride.1, "stride_height is 0")?;
            if p.out_shape.c > p.in_shape.c {
                return Err(KmodelError::Invalid { index: i, what: "pool output has more channels than its input" });
            }
            m(p.input, p.in_shape.numel().saturating_mul(e))?;
            m(p.output, p.out_shape.numel().saturating_mul(e))?;
        }
        Layer::Quantize { input, output, count, .. } => {
            m(input, count as u64 * 4)?;
            m(output, count as u64)?;
        }
        Layer::Dequantize { input, output, count, .. } => {
            m(input, count as u64)?;
            m(output, count as u64 * 4)?;
        }
        Layer::Requantize { input, output, count, .. } => {
            m(input, count as u64)?;
            m(output, count as u64)?;
        }
        Layer::L2Normalization { input, output, channels }
        | Layer::Softmax { input, output, channels }
        | Layer::Logistic { input, output, channels } => {
            m(input, channels as u64 * 4)?;
            m(output, channels as u64 * 4)?;
        }
        Layer::Concat { output, inputs } => {
            let mut total = 0u64;
            for p in inputs.chunks_exact(8) {
                let (start, size) = (u32_at(p, 0), u32_at(p, 4));
                m(start, size as u64)?;
                total += size as u64;
            }
            m(output, total)?;
        }
        Layer::FullyConnected { input, output, in_channels, out_channels, act, .. } => {
            if act > 2 {
                return Err(KmodelError::Invalid { index: i, what: "fully connected act must be 0, 1 or 2" });
            }
            m(input, in_channels as u64 * 4)?;
            m(output, out_channels as u64 * 4)?;
        }
        Layer::TfFlatten { input, output, shape } => {
            m(input, shape.numel().saturating_mul(4))?;
            m(output, shape.numel().saturating_mul(4))?;
        }
        Layer::ResizeNearest { input, output, in_shape, out_w, out_h, quantized } => {
            nonzero(i, out_w, "out_width is 0")?;
            nonzero(i, out_h, "out_height is 0")?;
            nonzero(i, in_shape.w, "input width is 0")?;
            nonzero(i, in_shape.h, "input height is 0")?;
            let e = if quantized { 1 } else { 4 };
            m(input, in_shape.numel().saturating_mul(e))?;
            m(output, (out_w as u64 * out_h as u64).saturating_mul(in_shape.c as u64).saturating_mul(e))?;
        }
        Layer::ChannelwiseDequantize { input, output, channels, channel_size, .. } => {
            let n = (channels as u64).saturating_mul(channel_size as u64);
            m(input, n)?;
            m(output, n.saturating_mul(4))?;
        }
        Layer::K210Conv { main_out, conv } => {
            let l = conv.layer;
            check_kpu(i, l.src_row, l.in_map_bytes(), req)?;
            check_kpu(i, l.dst_row, l.out_map_bytes(), req)?;
            if let Some(addr) = main_out {
                if l.dma_bytes as u64 != l.out_compact_bytes() {
                    return Err(KmodelError::Invalid {
                        index: i,
                        what: "dma_total_byte + 1 is not the output map size",
                    });
                }
                m(addr, l.out_compact_bytes())?;
            }
            check_act_shifts(i, conv.act)?;
            req.scratch = req.scratch.max(l.scratch_bytes());
            req.macs = req.macs.saturating_add(l.macs());
        }
        Layer::K210AddPadding { input, kpu_row, channels } => {
            m(input, channels as u64)?;
            check_kpu(i, kpu_row, kpu::map_bytes(4, 4, channels.max(1)), req)?;
        }
        Layer::K210RemovePadding { input, output, channels } => {
            m(input, channels as u64 * 16)?;
            m(output, channels as u64)?;
        }
        Layer::K210Upload { input, kpu_row, shape } => {
            nonzero(i, shape.w, "upload width is 0")?;
            m(input, shape.numel())?;
            check_kpu(i, kpu_row, kpu::map_bytes(shape.w, shape.h, shape.c.max(1)), req)?;
        }
    }
    Ok(())
}

/// Activation shifts above 31 are undefined in the reference (docs/kmodel.md §7.3).
pub(crate) fn check_act_shifts(index: u32, act: &[u8]) -> Result<(), KmodelError> {
    for seg in kpu::decode_activation(act) {
        if seg.shift > 31 {
            return Err(KmodelError::Invalid { index, what: "activation shift above 31" });
        }
    }
    Ok(())
}
