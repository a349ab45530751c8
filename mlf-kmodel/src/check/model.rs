//! A parsed and checked model of either runnable version, with the questions every caller asks
//! of it: its extent, steps, memory, input and outputs.

use crate::decode::{Step, Version, identify, v3 as d3};
use crate::error::{KmodelError, Part, Pool};
use crate::reader::Body;
use crate::types::{DataType, IoInfo, Requirements};

use super::{v3, v4};

/// A parsed, validated V3 or V4 model.
#[derive(Clone, Copy, Debug)]
pub enum Model<'a> {
    /// V3.
    V3(v3::Model<'a>),
    /// V4.
    V4(v4::Model<'a>),
}

impl<'a> Model<'a> {
    /// Identifies, parses and checks a model. Trailing bytes after the model are allowed (see
    /// [`Model::len`]); V5 is [`KmodelError::V5NotRunnable`].
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        Self::parse_with(bytes, |_, _| {})
    }

    /// Like [`Model::parse`], and calls `f` with each step once it is checked: one pass that
    /// parses, checks and decodes.
    pub fn parse_with(bytes: &'a [u8], mut f: impl FnMut(&Body<'a>, Step<'a>)) -> Result<Model<'a>, KmodelError> {
        match identify(bytes)? {
            Version::V3 => v3::Model::parse_with(bytes, |b, l| f(b, Step::V3(l))).map(Model::V3),
            Version::V4 => v4::Model::parse_with(bytes, |b, n| f(b, Step::V4(n))).map(Model::V4),
            Version::V5 => Err(KmodelError::V5NotRunnable),
        }
    }

    /// The bytes the model was parsed from (may continue past the model).
    pub fn bytes(&self) -> &'a [u8] {
        match self {
            Model::V3(m) => m.header.bytes,
            Model::V4(m) => m.bytes,
        }
    }

    /// 3 or 4.
    pub fn version(&self) -> u32 {
        match self {
            Model::V3(_) => 3,
            Model::V4(_) => 4,
        }
    }

    /// The model's extent in bytes (header to the end of the last body, without the final
    /// padding a file may omit). Bytes after it are trailing data.
    pub fn len(&self) -> usize {
        match self {
            Model::V3(m) => m.end,
            Model::V4(m) => m.end,
        }
    }

    /// Always false (a parsed model has at least one layer).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Number of layers or nodes.
    pub fn steps(&self) -> usize {
        match self {
            Model::V3(m) => m.header.layers as usize,
            Model::V4(m) => m.nodes as usize,
        }
    }

    /// Memory the interpreter needs.
    pub fn requirements(&self) -> Requirements {
        match self {
            Model::V3(m) => m.req,
            Model::V4(m) => m.req,
        }
    }

    /// The input `run` takes.
    pub fn input(&self) -> IoInfo {
        match self {
            Model::V3(m) => m.input,
            Model::V4(m) => m.input,
        }
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        match self {
            Model::V3(m) => m.header.outputs as usize,
            Model::V4(m) => m.outputs as usize,
        }
    }

    /// Output `i`: pool, byte start, byte size, element type. A V3 output is f32 unless the
    /// last of `steps` (the model's decoded steps) that writes its address produces u8, or its
    /// size is not a whole number of floats.
    pub fn output(&self, i: usize, steps: &[Step<'_>]) -> Option<(Pool, u32, u32, DataType)> {
        match self {
            Model::V3(_) => {
                let (pool, start, size) = self.output_place(i)?;
                let last = steps.iter().rev().find_map(|s| match s {
                    Step::V3(l) => v3_output_of(l).filter(|&(o, _)| o == start),
                    _ => None,
                });
                let dtype = match last {
                    _ if size % 4 != 0 => DataType::U8,
                    Some((_, t)) => t,
                    None => DataType::F32,
                };
                Some((pool, start, size, dtype))
            }
            Model::V4(m) => m.output_range(i as u32).map(|r| (r.pool, r.start, r.size, r.dtype)),
        }
    }

    /// Output `i`'s place: pool, byte start, byte size (a table lookup, no decoding).
    pub fn output_place(&self, i: usize) -> Option<(Pool, u32, u32)> {
        match self {
            Model::V3(m) => (i < m.header.outputs as usize).then(|| {
                let (addr, size) = m.header.output_range(i as u32);
                (Pool::Main, addr, size)
            }),
            Model::V4(m) => m.output_range(i as u32).map(|r| (r.pool, r.start, r.size)),
        }
    }

    /// Decodes every step of the parsed model, in order, and calls `f` with each.
    pub fn for_each_step(&self, mut f: impl FnMut(&Body<'a>, Step<'a>)) -> Result<(), KmodelError> {
        match self {
            Model::V3(m) => m.header.bodies().try_for_each(|b| {
                let b = b?;
                f(&b, Step::V3(m.decode(&b)?));
                Ok(())
            }),
            Model::V4(m) => m.bodies().try_for_each(|b| {
                let b = b?;
                f(&b, Step::V4(m.decode(&b)?));
                Ok(())
            }),
        }
    }

    /// Decodes every layer or node into `out[..self.steps()]`.
    pub fn decode_into(&self, out: &mut [Step<'a>]) -> Result<(), KmodelError> {
        let n = self.steps();
        if out.len() < n {
            return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: n as u32 });
        }
        self.for_each_step(|b, s| out[b.index as usize] = s)
    }
}

/// Where a V3 layer writes and what type.
fn v3_output_of(l: &d3::Layer<'_>) -> Option<(u32, DataType)> {
    use d3::Layer::*;
    Some(match *l {
        Add { output, .. }
        | GlobalAveragePool2d { output, .. }
        | AveragePool2d(d3::Pool2d { output, .. })
        | Dequantize { output, .. } => (output, DataType::F32),
        L2Normalization { output, .. }
        | Softmax { output, .. }
        | FullyConnected { output, .. }
        | TfFlatten { output, .. } => (output, DataType::F32),
        ChannelwiseDequantize { output, .. } | Logistic { output, .. } => (output, DataType::F32),
        ResizeNearest { output, quantized, .. } => (output, if quantized { DataType::U8 } else { DataType::F32 }),
        QuantizedAdd { output, .. }
        | QuantizedMaxPool2d(d3::Pool2d { output, .. })
        | Quantize { output, .. }
        | Requantize { output, .. } => (output, DataType::U8),
        K210RemovePadding { output, .. } => (output, DataType::U8),
        K210Conv { main_out: Some(a), .. } => (a, DataType::U8),
        _ => return None,
    })
}
