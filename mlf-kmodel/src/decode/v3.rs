//! kmodel V3 (nncase v0.1): the header, the output table, the layer headers and every layer
//! body the Kendryte SDK defines, decoded (checked against the model's memory by
//! `crate::check::v3`).
//!
//! Container (all integers little-endian): a 28-byte header {version = 3, flags (bit 0: 8-bit
//! weights), arch = 0, layers, max_start_address, main_mem_usage, outputs}; `outputs` ×
//! {address, size} (main-memory bytes); `layers` × {type, body_size}; then the bodies, each
//! padded to an 8-aligned file offset (the last one's padding may be missing). Structs and
//! layer types: Kendryte standalone SDK `lib/drivers/include/kpu.h`; the writer: nncase
//! v0.1.0-rc5 `src/NnCase.Converter.K210/Converters/Stages/Generate/Generator.cs`.

use crate::error::{Block, KmodelError, Part};
use crate::kpu::{KpuConv, KpuLayer};
use crate::reader::{Bodies, Reader, table_end, u32_at};

/// Layer type numbers (`kpu_model_layer_type_t` in the SDK's `kpu.h`).
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

fn shape(r: &mut Reader<'_>) -> Result<Shape, KmodelError> {
    Ok(Shape { w: r.u32()?, h: r.u32()?, c: r.u32()? })
}

fn too_small(index: u32, needed: u64, body: &[u8]) -> KmodelError {
    KmodelError::BodyTooSmall { index, needed, size: body.len() as u64 }
}

/// Decodes one body of layer type `ty` (`body` starts at model offset `at`; `file` is the
/// whole model, for the absolute offsets of `K210_CONV`). Checks that every field and array is
/// inside the body and every block inside the file.
pub fn decode<'a>(ty: u32, body: &'a [u8], at: usize, file: &'a [u8], index: u32) -> Result<Layer<'a>, KmodelError> {
    let mut r = Reader::new(body, at, Part::Body);
    let layer = (|| {
        let _flags = r.u32()?;
        match ty {
            kind::K210_CONV => k210_conv(&mut r, body, file, index),
            kind::FULLY_CONNECTED => fully_connected(&mut r, body, index),
            kind::CONCAT | kind::QUANTIZED_CONCAT => {
                let output = r.u32()?;
                let n = r.u32()?;
                let len = (n as usize).checked_mul(8).ok_or(too_small(index, u64::MAX, body))?;
                Ok(Layer::Concat { output, inputs: r.bytes(len)? })
            }
            kind::CHANNELWISE_DEQUANTIZE => {
                let (input, output, channels, channel_size) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
                let n = channels as u64 * 8;
                if n > r.remaining() as u64 {
                    return Err(too_small(index, 20 + n, body));
                }
                Ok(Layer::ChannelwiseDequantize { input, output, channels, channel_size, params: r.bytes(n as usize)? })
            }
            _ => fixed(ty, &mut r, index),
        }
    })();
    layer.map_err(|e| match e {
        KmodelError::Truncated { offset, needed, .. } => too_small(index, offset - at as u64 + needed, body),
        e => e,
    })
}

/// The layers whose bodies are fixed-size structs.
fn fixed<'a>(ty: u32, r: &mut Reader<'a>, index: u32) -> Result<Layer<'a>, KmodelError> {
    use kind::*;
    Ok(match ty {
        ADD => Layer::Add { a: r.u32()?, b: r.u32()?, output: r.u32()?, count: r.u32()? },
        QUANTIZED_ADD => quantized_add(r)?,
        GLOBAL_AVERAGE_POOL2D => {
            Layer::GlobalAveragePool2d { input: r.u32()?, output: r.u32()?, kernel_size: r.u32()?, channels: r.u32()? }
        }
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
        DEQUANTIZE => {
            Layer::Dequantize { input: r.u32()?, output: r.u32()?, count: r.u32()?, scale: r.f32()?, bias: r.f32()? }
        }
        REQUANTIZE => Layer::Requantize { input: r.u32()?, output: r.u32()?, count: r.u32()?, table: r.bytes(256)? },
        L2_NORMALIZATION => Layer::L2Normalization { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
        SOFTMAX => Layer::Softmax { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
        LOGISTIC => Layer::Logistic { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
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
        K210_ADD_PADDING => Layer::K210AddPadding { input: r.u32()?, kpu_row: r.u32()?, channels: r.u32()? },
        K210_REMOVE_PADDING => Layer::K210RemovePadding { input: r.u32()?, output: r.u32()?, channels: r.u32()? },
        K210_UPLOAD => Layer::K210Upload { input: r.u32()?, kpu_row: r.u32()?, shape: shape(r)? },
        _ => return Err(KmodelError::UnsupportedLayer { index, kind: ty }),
    })
}

fn quantized_add<'a>(r: &mut Reader<'a>) -> Result<Layer<'a>, KmodelError> {
    Ok(Layer::QuantizedAdd {
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
    })
}

/// `FULLY_CONNECTED`: f32 weights `[out][in]` and bias `[out]` follow the struct.
fn fully_connected<'a>(r: &mut Reader<'a>, body: &[u8], index: u32) -> Result<Layer<'a>, KmodelError> {
    let (input, output, ic, oc, act) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    let wn = (ic as u64).saturating_mul(oc as u64).saturating_mul(4);
    let need = wn.saturating_add(oc as u64 * 4);
    if need > r.remaining() as u64 {
        return Err(too_small(index, need.saturating_add(24), body));
    }
    let weights = r.bytes(wn as usize)?;
    let bias = r.bytes(oc as usize * 4)?;
    Ok(Layer::FullyConnected { input, output, in_channels: ic, out_channels: oc, act, weights, bias })
}

/// `K210_CONV`: {flags, main_mem_out_address, layer_offset, weights_offset, bn_offset,
/// act_offset}; the four offsets are absolute file offsets of the 96 register bytes, the
/// weights, the batch-norm table (8 bytes per output channel) and the 144-byte activation table.
fn k210_conv<'a>(r: &mut Reader<'a>, body: &[u8], file: &'a [u8], index: u32) -> Result<Layer<'a>, KmodelError> {
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
        regs,
        bn: block(bn_off, 8 * layer.out_c as u64, Block::BatchNorm)?,
        act: block(act_off, 144, Block::Activation)?,
        weights: block(w_off, layer.weight_bytes() as u64, Block::Weights)?,
        bn_at: bn_off,
        act_at: act_off,
        weights_at: w_off,
    };
    let flags = u32_at(body, 0);
    Ok(Layer::K210Conv { main_out: (flags & 1 != 0).then_some(main), conv })
}
