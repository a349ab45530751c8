//! Kendryte K210 kmodels: a validating, zero-copy parser for V3 and V4 (V1 and unknown
//! versions are identified and refused, V5's header is read for inspection), and an
//! interpreter with a bit-exact KPU emulation (docs/kmodel.md).
//!
//! Everything is checked once, by [`Model::parse`]: every table, body, block offset, memory
//! range and divisor. A damaged model is an error, never an out-of-bounds read. Running needs
//! no allocation: the caller supplies main memory, KPU RAM and scratch memory of the sizes in
//! [`Model::requirements`], and a table of decoded steps ([`Plan`]) filled once.
//!
//! ```
//! use mlf_kmodel::{identify, Version};
//! assert_eq!(identify(b"LDMK\x05\0\0\0"), Ok(Version::V5));
//! assert!(identify(&[1, 0, 0, 0, 1, 0, 0, 0]).is_err()); // V1: refused, and says so
//! ```

#![no_std]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod error;
pub mod kpu;
mod ops_v3;
pub(crate) mod ops_v4;
pub mod reader;
pub mod v3;
pub mod v4;
pub mod v5;

pub use error::{Block, KmodelError, Part, Pool};
pub use kpu::{ActivationRounding, kpu_activation};
pub use reader::Body;

/// Element type of an input or output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    /// `f32`.
    F32,
    /// `u8`.
    U8,
}

impl DataType {
    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            DataType::F32 => 4,
            DataType::U8 => 1,
        }
    }
}

/// The type, shape and byte size of a model input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoInfo {
    /// Element type.
    pub dtype: DataType,
    /// NCHW shape.
    pub shape: [u32; 4],
    /// Bytes the caller passes to `run`.
    pub bytes: u64,
}

/// Memory the interpreter needs, computed when the model is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Requirements {
    /// Main (CPU working) memory: V3 `main_mem_usage` rounded up to 8 plus 8 bytes of DMA
    /// slack; V4 `main_mem`.
    pub main: u64,
    /// KPU RAM: up to the highest byte any layer touches (at most 2 MiB).
    pub kpu: u64,
    /// Scratch for the KPU convolution emulation (largest layer).
    pub scratch: u64,
    /// Multiply-accumulates of the KPU layers per inference.
    pub macs: u64,
}

/// A kmodel version, from the first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// V3 (nncase v0.1).
    V3,
    /// V4 (nncase v0.2).
    V4,
    /// V5 (nncase ≥ 1.0): header readable, not runnable.
    V5,
}

/// Identifies a kmodel from its first bytes (docs/kmodel.md §1). V1, kendryte-model-compiler
/// files and anything else are errors that say what the file is.
pub fn identify(bytes: &[u8]) -> Result<Version, KmodelError> {
    let word = |o: usize| bytes.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut head = [0u8; 8];
    let n = bytes.len().min(8);
    head[..n].copy_from_slice(&bytes[..n]);
    if bytes.starts_with(b"LDMK") {
        return match word(4) {
            Some(4) => Ok(Version::V4),
            Some(5) => Ok(Version::V5),
            Some(version) => Err(KmodelError::UnsupportedVersion { version }),
            None => Err(KmodelError::Truncated {
                part: Part::Header,
                offset: 4,
                needed: 4,
                available: bytes.len().saturating_sub(4) as u64,
            }),
        };
    }
    match word(0) {
        Some(3) => Ok(Version::V3),
        Some(1) => Err(KmodelError::LegacyV1),
        Some(0x1234_5678) => Err(KmodelError::ModelCompilerBin),
        _ => Err(KmodelError::UnknownFormat { head }),
    }
}

/// A parsed, validated V3 or V4 model.
#[derive(Clone, Copy, Debug)]
pub enum Model<'a> {
    /// V3.
    V3(v3::Model<'a>),
    /// V4.
    V4(v4::Model<'a>),
}

/// One decoded layer (V3) or node (V4).
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// Not filled.
    Empty,
    /// A V3 layer.
    V3(v3::Layer<'a>),
    /// A V4 node.
    V4(v4::Node<'a>),
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
fn v3_output_of(l: &v3::Layer<'_>) -> Option<(u32, DataType)> {
    use v3::Layer::*;
    Some(match *l {
        Add { output, .. }
        | GlobalAveragePool2d { output, .. }
        | AveragePool2d(v3::Pool2d { output, .. })
        | Dequantize { output, .. } => (output, DataType::F32),
        L2Normalization { output, .. }
        | Softmax { output, .. }
        | FullyConnected { output, .. }
        | TfFlatten { output, .. } => (output, DataType::F32),
        ChannelwiseDequantize { output, .. } | Logistic { output, .. } => (output, DataType::F32),
        ResizeNearest { output, quantized, .. } => (output, if quantized { DataType::U8 } else { DataType::F32 }),
        QuantizedAdd { output, .. }
        | QuantizedMaxPool2d(v3::Pool2d { output, .. })
        | Quantize { output, .. }
        | Requantize { output, .. } => (output, DataType::U8),
        K210RemovePadding { output, .. } => (output, DataType::U8),
        K210Conv { main_out: Some(a), .. } => (a, DataType::U8),
        _ => return None,
    })
}

/// Interpreter options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Activation rounding (default: nncase v0.2, docs/kmodel.md §8).
    pub rounding: ActivationRounding,
}

/// The memory a run uses. Sizes must be at least [`Model::requirements`].
pub struct Memory<'m> {
    /// Main memory.
    pub main: &'m mut [u8],
    /// KPU RAM (emulated).
    pub kpu: &'m mut [u8],
    /// Scratch.
    pub scratch: &'m mut [u8],
}

/// A parsed model and its decoded steps, filled once by [`Plan::prepare`] and reused by every
/// run. `N` must be at least the model's step count (the code generator sizes it exactly).
pub struct Plan<'a, const N: usize> {
    model: Option<Model<'a>>,
    steps: [Step<'a>; N],
}

impl<'a, const N: usize> Default for Plan<'a, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, const N: usize> Plan<'a, N> {
    /// An empty plan (usable in a `static`).
    pub const fn new() -> Self {
        Plan { model: None, steps: [Step::Empty; N] }
    }

    /// Parses `bytes` and decodes its steps, the first time only.
    pub fn prepare(&mut self, bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        if let Some(m) = self.model {
            return Ok(m);
        }
        let (steps, mut fits) = (&mut self.steps, true);
        let m = Model::parse_with(bytes, |b, s| match steps.get_mut(b.index as usize) {
            Some(slot) => *slot = s,
            None => fits = false,
        })?;
        if !fits {
            return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: m.steps() as u32 });
        }
        self.model = Some(m);
        Ok(m)
    }

    /// Runs the model on `input` (bytes of the type and size [`Model::input`] says).
    pub fn run(&mut self, bytes: &'a [u8], mem: Memory<'_>, input: &[u8], opts: Options) -> Result<(), KmodelError> {
        let m = self.prepare(bytes)?;
        run(&m, &self.steps[..m.steps()], mem, input, opts)
    }

    /// Output `i`'s bytes after a run.
    pub fn output<'m>(&self, main: &'m [u8], kpu: &'m [u8], i: usize) -> Result<&'m [u8], KmodelError> {
        let m = self.model.ok_or(KmodelError::NoSuchOutput { index: i as u32 })?;
        output(&m, main, kpu, i)
    }
}

/// Output `i`'s bytes in `main` (or `kpu`) after a run.
pub fn output<'m>(m: &Model<'_>, main: &'m [u8], kpu: &'m [u8], i: usize) -> Result<&'m [u8], KmodelError> {
    let (pool, start, size) = m.output_place(i).ok_or(KmodelError::NoSuchOutput { index: i as u32 })?;
    let buf = if pool == Pool::Kpu { kpu } else { main };
    buf.get(start as usize..start as usize + size as usize).ok_or(KmodelError::MemoryTooSmall {
        pool,
        needed: start as u64 + size as u64,
        got: buf.len() as u64,
    })
}

/// Runs a parsed model: stages the input, then every step in order. `steps` must be this
/// model's own, from [`Model::decode_into`] (their ranges were checked against its memory
/// sizes); [`Plan`] keeps the two together.
pub fn run(m: &Model<'_>, steps: &[Step<'_>], mem: Memory<'_>, input: &[u8], opts: Options) -> Result<(), KmodelError> {
    let req = m.requirements();
    for (pool, need, got) in [
        (Pool::Main, req.main, mem.main.len()),
        (Pool::Kpu, req.kpu, mem.kpu.len()),
        (Pool::Scratch, req.scratch, mem.scratch.len()),
    ] {
        if (got as u64) < need {
            return Err(KmodelError::MemoryTooSmall { pool, needed: need, got: got as u64 });
        }
    }
    let info = m.input();
    if input.len() as u64 != info.bytes {
        return Err(KmodelError::InputSize { expected: info.bytes, got: input.len() as u64 });
    }
    if steps.len() != m.steps() {
        return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: steps.len() as u32 });
    }
    let Memory { main, kpu: kpu_ram, scratch } = mem;
    match m {
        Model::V3(v) => {
            match steps.first() {
                Some(Step::V3(v3::Layer::K210Conv { conv, .. })) => {
                    let l = conv.layer;
                    kpu::upload(input, kpu_ram, l.src_row as usize * 64, 1, l.in_c, l.in_h, l.in_w);
                }
                Some(Step::V3(v3::Layer::FullyConnected { input: addr, .. })) => {
                    main[*addr as usize..*addr as usize + input.len()].copy_from_slice(input);
                }
                _ => return Err(KmodelError::FirstLayer { kind: v.header.layer_header(0).0 }),
            }
            for s in steps {
                match s {
                    Step::V3(l) => ops_v3::run_layer(l, main, kpu_ram, scratch, opts.rounding)?,
                    _ => return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: steps.len() as u32 }),
                }
            }
        }
        Model::V4(v) => {
            let (r, _) = v.input_range(0).ok_or(KmodelError::Empty { part: Part::Inputs })?;
            match r.pool {
                Pool::Main => main[r.bytes()].copy_from_slice(input),
                _ => {
                    let s = v.input.shape;
                    kpu::upload(input, kpu_ram, r.start as usize, s[0], s[1], s[2], s[3]);
                }
            }
            let mut mm = ops_v4::Mem { consts: v.constants, main, kpu: kpu_ram };
            for s in steps {
                match s {
                    Step::V4(n) => ops_v4::run_node(n, &mut mm, scratch, opts.rounding)?,
                    _ => return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: steps.len() as u32 }),
                }
            }
        }
    }
    Ok(())
}

/// Views output bytes as `&[f32; N]` (the memory is 4-aligned in mlf's arenas).
pub fn as_f32_array<const N: usize>(b: &[u8]) -> Result<&[f32; N], KmodelError> {
    if cfg!(target_endian = "big") {
        return Err(KmodelError::OutputLayout);
    }
    let s: &[f32] = bytemuck::try_cast_slice(b).map_err(|_| KmodelError::OutputLayout)?;
    s.try_into().map_err(|_| KmodelError::OutputLayout)
}

/// Views output bytes as `&[u8; N]`.
pub fn as_u8_array<const N: usize>(b: &[u8]) -> Result<&[u8; N], KmodelError> {
    b.try_into().map_err(|_| KmodelError::OutputLayout)
}

/// The bytes of an `f32` input (little-endian targets).
pub fn f32_bytes(x: &[f32]) -> &[u8] {
    bytemuck::cast_slice(x)
}
