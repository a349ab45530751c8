//! A V3 model parsed and checked: every layer decoded, every main-memory address and KPU RAM
//! map checked against the memory the model declares, every divisor checked, and the memory the
//! run needs computed.
//!
//! Main memory is `main_mem_usage` rounded up to 8, plus 8 bytes: the SDK's KPU-to-main DMA
//! writes whole 8-byte words. The SDK runs a model only when its first layer is `K210_CONV`
//! or `FULLY_CONNECTED`; the input is then that layer's input map (u8 C × H × W) or its
//! `in_channels` floats.

use crate::decode::v3::{Header, Layer, decode, kind};
use crate::error::{KmodelError, Pool};
use crate::kpu::{KPU_RAM_BYTES, arith::check_act_shifts, map_bytes};
use crate::reader::{Body, u32_at};
use crate::types::{DataType, IoInfo, Requirements};

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
            req: Requirements { main: main_limit, ..Requirements::default() },
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
                m.input = input_of(&layer).ok_or(KmodelError::FirstLayer { kind: b.kind })?;
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

/// The input a first layer takes.
fn input_of(layer: &Layer<'_>) -> Option<IoInfo> {
    match *layer {
        Layer::K210Conv { conv, .. } => {
            let l = conv.layer;
            Some(IoInfo { dtype: DataType::U8, shape: [1, l.in_c, l.in_h, l.in_w], bytes: l.in_compact_bytes() })
        }
        Layer::FullyConnected { in_channels, .. } => {
            Some(IoInfo { dtype: DataType::F32, shape: [1, in_channels, 1, 1], bytes: in_channels as u64 * 4 })
        }
        _ => None,
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

fn nonzero(index: u32, v: u32, what: &'static str) -> Result<(), KmodelError> {
    if v == 0 { Err(KmodelError::Invalid { index, what }) } else { Ok(()) }
}

/// Checks one layer's addresses against main memory and KPU RAM and its divisors, and updates
/// the memory requirements.
fn check_layer(l: &Layer<'_>, i: u32, main: u64, req: &mut Requirements) -> Result<(), KmodelError> {
    let m = |addr: u32, size: u64| check_main(i, addr, size, main);
    match *l {
        Layer::Add { a, b, output, count } => [a, b, output].into_iter().try_for_each(|x| m(x, count as u64 * 4)),
        Layer::QuantizedAdd { a, b, output, count, a_shift, b_shift, o_shift, .. } => {
            [a, b, output].into_iter().try_for_each(|x| m(x, count as u64))?;
            match [a_shift, b_shift, o_shift].iter().all(|s| (0..=63).contains(s)) {
                true => Ok(()),
                false => Err(KmodelError::Invalid { index: i, what: "quantized add shift outside 0..=63" }),
            }
        }
        Layer::GlobalAveragePool2d { input, output, kernel_size, channels } => {
            nonzero(i, kernel_size, "kernel_size is 0")?;
            m(input, (kernel_size as u64).saturating_mul(channels as u64).saturating_mul(4))?;
            m(output, channels as u64 * 4)
        }
        Layer::QuantizedMaxPool2d(p) | Layer::AveragePool2d(p) => {
            let e = if matches!(l, Layer::AveragePool2d(_)) { 4 } else { 1 };
            nonzero(i, p.stride.0, "stride_width is 0")?;
            nonzero(i, p.stride.1, "stride_height is 0")?;
            if p.out_shape.c > p.in_shape.c {
                return Err(KmodelError::Invalid { index: i, what: "pool output has more channels than its input" });
            }
            m(p.input, p.in_shape.numel().saturating_mul(e))?;
            m(p.output, p.out_shape.numel().saturating_mul(e))
        }
        Layer::Quantize { input, output, count, .. } => m(input, count as u64 * 4).and(m(output, count as u64)),
        Layer::Dequantize { input, output, count, .. } => m(input, count as u64).and(m(output, count as u64 * 4)),
        Layer::Requantize { input, output, count, .. } => m(input, count as u64).and(m(output, count as u64)),
        Layer::L2Normalization { input, output, channels }
        | Layer::Softmax { input, output, channels }
        | Layer::Logistic { input, output, channels } => {
            m(input, channels as u64 * 4).and(m(output, channels as u64 * 4))
        }
        Layer::Concat { output, inputs } => {
            let mut total = 0u64;
            for p in inputs.chunks_exact(8) {
                let (start, size) = (u32_at(p, 0), u32_at(p, 4));
                m(start, size as u64)?;
                total += size as u64;
            }
            m(output, total)
        }
        Layer::FullyConnected { input, output, in_channels, out_channels, act, .. } => {
            if act > 2 {
                return Err(KmodelError::Invalid { index: i, what: "fully connected act must be 0, 1 or 2" });
            }
            m(input, in_channels as u64 * 4).and(m(output, out_channels as u64 * 4))
        }
        Layer::TfFlatten { input, output, shape } => {
            m(input, shape.numel().saturating_mul(4)).and(m(output, shape.numel().saturating_mul(4)))
        }
        _ => check_shaped(l, i, main, req),
    }
}

/// [`check_layer`] for resizing, per-channel dequantisation and the KPU layers.
fn check_shaped(l: &Layer<'_>, i: u32, main: u64, req: &mut Requirements) -> Result<(), KmodelError> {
    let m = |addr: u32, size: u64| check_main(i, addr, size, main);
    match *l {
        Layer::ResizeNearest { input, output, in_shape, out_w, out_h, quantized } => {
            nonzero(i, out_w, "out_width is 0")?;
            nonzero(i, out_h, "out_height is 0")?;
            nonzero(i, in_shape.w, "input width is 0")?;
            nonzero(i, in_shape.h, "input height is 0")?;
            let e = if quantized { 1 } else { 4 };
            m(input, in_shape.numel().saturating_mul(e))?;
            m(output, (out_w as u64 * out_h as u64).saturating_mul(in_shape.c as u64).saturating_mul(e))
        }
        Layer::ChannelwiseDequantize { input, output, channels, channel_size, .. } => {
            let n = (channels as u64).saturating_mul(channel_size as u64);
            m(input, n).and(m(output, n.saturating_mul(4)))
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
            Ok(())
        }
        Layer::K210AddPadding { input, kpu_row, channels } => {
            m(input, channels as u64)?;
            check_kpu(i, kpu_row, map_bytes(4, 4, channels.max(1)), req)
        }
        Layer::K210RemovePadding { input, output, channels } => {
            m(input, channels as u64 * 16).and(m(output, channels as u64))
        }
        Layer::K210Upload { input, kpu_row, shape } => {
            nonzero(i, shape.w, "upload width is 0")?;
            m(input, shape.numel())?;
            check_kpu(i, kpu_row, map_bytes(shape.w, shape.h, shape.c.max(1)), req)
        }
        _ => Ok(()),
    }
}
