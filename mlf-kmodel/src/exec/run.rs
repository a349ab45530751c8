//! One run of a model: check the memory and the input, stage the input, run every step.

use crate::check::Model;
use crate::decode::{Step, v3::Layer, v4::Node};
use crate::error::{KmodelError, Part, Pool};
use crate::kpu::{ActivationRounding, DeviceModel, KpuBackend, KpuConv, download, init, run_layer, upload};

use super::v3::run_layer as run_v3_layer;
use super::v4::{Mem, run_node as run_v4_node};

/// Interpreter options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The device model's activation rounding (default: nncase v0.2's; see
    /// [`ActivationRounding`]). The K210's KPU rounds as the chip does.
    pub rounding: ActivationRounding,
}

/// The memory a run on the device model uses. Sizes must be at least
/// [`Model::requirements`]; each can be its own zero-initialised static.
pub struct Memory<'m> {
    /// Main memory.
    pub main: &'m mut [u8],
    /// KPU RAM (emulated).
    pub kpu: &'m mut [u8],
    /// Scratch: the emulation's, then the CPU layers'.
    pub scratch: &'m mut [u8],
}

/// Output `i`'s bytes in `main` (or, for an output in KPU RAM, in `kpu`: the emulated RAM, or
/// the K210's KPU RAM) after a run.
pub fn output<'m>(m: &Model<'_>, main: &'m [u8], kpu: &'m [u8], i: usize) -> Result<&'m [u8], KmodelError> {
    let (pool, start, size) = m.output_place(i).ok_or(KmodelError::NoSuchOutput { index: i as u32 })?;
    let buf = if pool == Pool::Kpu { kpu } else { main };
    buf.get(start as usize..start as usize + size as usize).ok_or(KmodelError::MemoryTooSmall {
        pool,
        needed: start as u64 + size as u64,
        got: buf.len() as u64,
    })
}

/// Runs a parsed model on the device model: stages the input, then every step in order.
/// `steps` must be this model's own, from [`Model::decode_into`] (their ranges were checked
/// against its memory sizes); [`super::Plan`] keeps the two together.
pub fn run(m: &Model<'_>, steps: &[Step<'_>], mem: Memory<'_>, input: &[u8], opts: Options) -> Result<(), KmodelError> {
    let req = m.requirements();
    fits(Pool::Kpu, req.kpu, mem.kpu.len())?;
    fits(Pool::Scratch, req.scratch, mem.scratch.len())?;
    let emulation = (req.emulation_scratch() as usize).min(mem.scratch.len());
    let (emu, cpu) = mem.scratch.split_at_mut(emulation);
    let mut kpu = DeviceModel::new(m.bytes(), mem.kpu, emu, opts.rounding);
    run_on(m, steps, &mut kpu, mem.main, cpu, input)
}

/// Runs a parsed model with its KPU layers on `kpu`: `main` is main memory, `scratch` the CPU
/// layers' scratch ([`crate::Requirements::cpu_scratch`] bytes, usually 0).
pub fn run_on<B: KpuBackend + ?Sized>(
    m: &Model<'_>,
    steps: &[Step<'_>],
    kpu: &mut B,
    main: &mut [u8],
    scratch: &mut [u8],
    input: &[u8],
) -> Result<(), KmodelError> {
    let req = m.requirements();
    fits(Pool::Main, req.main, main.len())?;
    fits(Pool::Kpu, req.kpu, kpu.ram().len())?;
    fits(Pool::Scratch, req.cpu_scratch, scratch.len())?;
    let info = m.input();
    if input.len() as u64 != info.bytes {
        return Err(KmodelError::InputSize { expected: info.bytes, got: input.len() as u64 });
    }
    if steps.len() != m.steps() {
        return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: steps.len() as u32 });
    }
    stage_input(m, steps, kpu, main, input)?;
    let mut model_at = None;
    for (index, s) in steps.iter().enumerate() {
        let index = index as u32;
        #[cfg(feature = "profile")]
        let unit = if s.on_kpu() { crate::profile::Unit::Kpu } else { crate::profile::Unit::Cpu };
        #[cfg(feature = "profile")]
        crate::profile::before(index, s.name(), unit);
        match s {
            Step::V3(Layer::K210Conv { main_out, conv }) => {
                let at = kpu_ready(kpu, m, &mut model_at)?;
                conv_layer(kpu, conv, (at, 0, index), main_out.map(|a| a as usize), main)?;
            }
            Step::V3(l) => run_v3_layer(l, main, kpu.ram()),
            Step::V4(Node::KpuConv2d { main_out, batches, conv }) => {
                let at = kpu_ready(kpu, m, &mut model_at)?;
                for b in 0..*batches {
                    conv_layer(kpu, conv, (at, b, index), main_out.map(|r| r.start as usize), main)?;
                }
            }
            Step::V4(n) => {
                let consts = match m {
                    Model::V4(v) => v.constants,
                    Model::V3(_) => &[],
                };
                run_v4_node(n, &mut Mem { consts, main, kpu: kpu.ram() }, scratch)?;
            }
            Step::Empty => return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: index }),
        }
        #[cfg(feature = "profile")]
        crate::profile::after(index, s.name(), unit);
    }
    Ok(())
}

fn fits(pool: Pool, needed: u64, got: usize) -> Result<(), KmodelError> {
    match (got as u64) < needed {
        true => Err(KmodelError::MemoryTooSmall { pool, needed, got: got as u64 }),
        false => Ok(()),
    }
}

/// Programs the KPU and finds the model's bus address, the first time a run needs the KPU.
fn kpu_ready<B: KpuBackend + ?Sized>(kpu: &mut B, m: &Model<'_>, at: &mut Option<u32>) -> Result<u32, KmodelError> {
    if let Some(a) = *at {
        return Ok(a);
    }
    let a = kpu.model_address(m.bytes())?;
    init(kpu)?;
    *at = Some(a);
    Ok(a)
}

/// Runs batch `b` of a KPU layer (model at bus address `at`, step `index`), and copies the
/// compact u8 result to main memory at `main_out` + `b` maps when the model asks for it.
fn conv_layer<B: KpuBackend + ?Sized>(
    kpu: &mut B,
    conv: &KpuConv<'_>,
    (at, b, index): (u32, u32, u32),
    main_out: Option<usize>,
    main: &mut [u8],
) -> Result<(), KmodelError> {
    let words = conv.words(at, b).ok_or(KmodelError::ModelPlacement { address: at as u64 })?;
    run_layer(kpu, &words, index)?;
    if let Some(start) = main_out {
        let l = &conv.layer;
        let per = l.out_compact_bytes() as usize;
        let dst = l.dst_row as usize * 64 + b as usize * l.out_map_bytes() as usize;
        let out = &mut main[start + b as usize * per..start + (b as usize + 1) * per];
        download(kpu.ram(), dst, l.out_c, l.out_h, l.out_w, out);
    }
    Ok(())
}

/// Puts the input where the first step reads it: V3 — the first `K210_CONV`'s input map in
/// KPU RAM (KPU layout) or the first `FULLY_CONNECTED`'s floats in main memory; V4 — input 0's
/// range (uploaded with the KPU layout when it is in KPU RAM).
fn stage_input<B: KpuBackend + ?Sized>(
    m: &Model<'_>,
    steps: &[Step<'_>],
    kpu: &mut B,
    main: &mut [u8],
    input: &[u8],
) -> Result<(), KmodelError> {
    match m {
        Model::V3(v) => match steps.first() {
            Some(Step::V3(Layer::K210Conv { conv, .. })) => {
                let l = conv.layer;
                upload(input, kpu.ram(), l.src_row as usize * 64, 1, l.in_c, l.in_h, l.in_w);
            }
            Some(Step::V3(Layer::FullyConnected { input: addr, .. })) => {
                main[*addr as usize..*addr as usize + input.len()].copy_from_slice(input);
            }
            _ => return Err(KmodelError::FirstLayer { kind: v.header.layer_header(0).0 }),
        },
        Model::V4(v) => {
            let (r, _) = v.input_range(0).ok_or(KmodelError::Empty { part: Part::Inputs })?;
            match r.pool {
                Pool::Main => main[r.bytes()].copy_from_slice(input),
                _ => {
                    let s = v.input.shape;
                    upload(input, kpu.ram(), r.start as usize, s[0], s[1], s[2], s[3]);
                }
            }
        }
    }
    Ok(())
}
