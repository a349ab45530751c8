//! kmodel V5 (nncase ≥ 1.0): the header, modules, mempools, functions and sections, read for
//! `inspect` only. Running V5 models (nncase's stack VM) is out of scope.
//!
//! Two header layouts exist (nncase `include/nncase/runtime/model.h`, changed 2021-08-18):
//!
//! - v1.0.0 and later, 32 bytes: {'KMDL', version 5, header_size (32), flags, alignment,
//!   modules, entry_module, entry_function}; each module starts with a 48-byte header
//!   {type[16], version, header_size (48), size (whole module), mempools, shared_mempools,
//!   sections, functions, reserved}, then mempools {u8 location, 3 bytes, u32 size}, shared
//!   mempools {module, size}, functions (each {header_size, size, …} and its I/O tables), and
//!   sections {name[16], flags, body_start, body_size, reserved} each followed (unless flag 1,
//!   "merged into .rdata") by `body_start` padding bytes and the body.
//! - Before that (nncase 1.0 development, e.g. the 2021-07 `yolox_nano_224.kmodel`), 24 bytes:
//!   {'KMDL', version 5, flags, alignment, modules, main_module}; each module starts with a
//!   40-byte header {type[16], size (of what follows the header), mempools, inputs, outputs,
//!   sections, reserved}, then mempools, `inputs` × memory_range (12 bytes: u8 location,
//!   u8 datatype, u16, u32 start, u32 size), the input shapes ({u32 rank, rank × u32}), the same
//!   for the outputs, then the sections as above (nncase's `runtime_module::initialize` of that
//!   time).
//!
//! The third word tells them apart: 32 is `header_size` (new); anything else is `flags` (old).

use crate::error::{KmodelError, Part};
use crate::reader::Reader;

/// The V5 model header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// `true` for the v1.0.0+ layout (`header_size` = 32), `false` for the older 24-byte one.
    pub new_layout: bool,
    /// `flags`.
    pub flags: u32,
    /// Alignment (8 CPU, 256 K210).
    pub alignment: u32,
    /// Number of modules.
    pub modules: u32,
    /// Entry module.
    pub entry_module: u32,
    /// Entry function (new layout only).
    pub entry_function: u32,
    /// Offset of the first module.
    pub modules_at: usize,
}

/// One module's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module<'a> {
    /// Module type (`"stackvm"`, `"k210"`), NUL padding removed.
    pub kind: &'a [u8],
    /// Module version (0 in the old layout, which has none).
    pub version: u32,
    /// Whole module size, header included.
    pub size: u32,
    /// Mempool count.
    pub mempools: u32,
    /// Shared mempool count.
    pub shared_mempools: u32,
    /// Section count.
    pub sections: u32,
    /// Function count (0 in the old layout, whose modules have their inputs and outputs
    /// themselves).
    pub functions: u32,
    /// Offset of the module in the file.
    pub offset: usize,
}

/// A mempool descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mempool {
    /// 0 input, 1 output, 2 rdata, 3 data, 4 shared_data, 64+ private.
    pub location: u8,
    /// Bytes.
    pub size: u32,
}

/// A section header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    /// Name (`.text`, `.rdata`, …), NUL padding removed.
    pub name: &'a [u8],
    /// Flags (bit 0: merged into `.rdata`).
    pub flags: u32,
    /// Body start (padding before the body).
    pub body_start: u32,
    /// Body size.
    pub body_size: u32,
}

fn trim(b: &[u8]) -> &[u8] {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..n]
}

/// Reads the V5 header.
pub fn header(bytes: &[u8]) -> Result<Header, KmodelError> {
    let mut r = Reader::new(bytes, 0, Part::Header);
    let _ident = r.u32()?;
    let _version = r.u32()?;
    let third = r.u32()?;
    if third == 32 {
        let flags = r.u32()?;
        let alignment = r.u32()?;
        let modules = r.u32()?;
        let entry_module = r.u32()?;
        let entry_function = r.u32()?;
        Ok(Header { new_layout: true, flags, alignment, modules, entry_module, entry_function, modules_at: 32 })
    } else {
        let alignment = r.u32()?;
        let modules = r.u32()?;
        let entry_module = r.u32()?;
        Ok(Header {
            new_layout: false,
            flags: third,
            alignment,
            modules,
            entry_module,
            entry_function: 0,
            modules_at: 24,
        })
    }
}

/// Calls `f` for every module with its mempools and sections; stops at the first damaged one.
/// Returns the end offset of the last module.
pub fn walk<'a>(
    bytes: &'a [u8],
    h: &Header,
    mut f: impl FnMut(&Module<'a>, &mut dyn Iterator<Item = Mempool>, &mut dyn Iterator<Item = Section<'a>>),
) -> Result<usize, KmodelError> {
    let mut at = h.modules_at;
    if h.modules > 1024 {
        return Err(KmodelError::BadCount { part: Part::Module, count: h.modules });
    }
    for _ in 0..h.modules {
        let (m, io, header_size) = module_header(bytes, at, h.new_layout)?;
        let mut mr = Reader::new(&bytes[at..at + m.size as usize], at, Part::Module);
        mr.seek(header_size)?;
        let mut pools = [Mempool { location: 0, size: 0 }; 16];
        for i in 0..m.mempools as usize {
            let location = mr.u8()?;
            mr.skip(3)?;
            let size = mr.u32()?;
            if let Some(p) = pools.get_mut(i) {
                *p = Mempool { location, size };
            }
        }
        if h.new_layout {
            mr.skip(m.shared_mempools as usize * 8)?;
            for _ in 0..m.functions {
                let fstart = mr.pos();
                let (_header_size, fsize) = (mr.u32()?, mr.u32()?);
                let end = fstart.checked_add(fsize as usize);
                mr.seek(end.ok_or(KmodelError::BadCount { part: Part::Module, count: fsize })?)?;
            }
        } else {
            skip_io(&mut mr, io.0)?;
            skip_io(&mut mr, io.1)?;
        }
        let mut secs: [Option<Section<'a>>; 16] = [None; 16];
        for i in 0..m.sections as usize {
            let s = section(&mut mr)?;
            if let Some(slot) = secs.get_mut(i) {
                *slot = Some(s);
            }
        }
        let np = (m.mempools as usize).min(pools.len());
        f(&m, &mut pools[..np].iter().copied(), &mut secs.iter().flatten().copied());
        at += m.size as usize;
    }
    Ok(at)
}

/// The module header at `at`: the module (its `size` covering header and payload), its
/// (inputs, outputs) in the old layout, and the header's size.
fn module_header(bytes: &[u8], at: usize, new_layout: bool) -> Result<(Module<'_>, (u32, u32), usize), KmodelError> {
    let mut r = Reader::new(bytes.get(at..).unwrap_or(&[]), at, Part::Module);
    let kind = trim(r.bytes(16)?);
    let (m, io, header_size) = if new_layout {
        let (version, header_size, size) = (r.u32()?, r.u32()?, r.u32()?);
        let (mempools, shared_mempools, sections, functions) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let _reserved = r.u32()?;
        let m = Module { kind, version, size, mempools, shared_mempools, sections, functions, offset: at };
        (m, (0, 0), header_size as usize)
    } else {
        let (payload, mempools, inputs, outputs, sections) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let _reserved = r.u32()?;
        let size = payload
            .checked_add(OLD_MODULE_HEADER as u32)
            .ok_or(KmodelError::BadCount { part: Part::Module, count: payload })?;
        let m = Module { kind, version: 0, size, mempools, shared_mempools: 0, sections, functions: 0, offset: at };
        (m, (inputs, outputs), OLD_MODULE_HEADER)
    };
    if (m.size as usize) < header_size || at.checked_add(m.size as usize).is_none_or(|e| e > bytes.len()) {
        let available = (bytes.len() - at.min(bytes.len())) as u64;
        return Err(KmodelError::Truncated { part: Part::Module, offset: at as u64, needed: m.size as u64, available });
    }
    let counts = [m.mempools, m.sections, m.shared_mempools, m.functions, io.0, io.1];
    if counts.iter().any(|&c| c > 4096) {
        return Err(KmodelError::BadCount { part: Part::Module, count: counts.into_iter().max().unwrap_or(0) });
    }
    Ok((m, io, header_size))
}

/// The size of an old-layout module header.
const OLD_MODULE_HEADER: usize = 40;

/// Skips `n` memory ranges (12 bytes each) and then `n` shapes ({rank, rank × u32}).
fn skip_io(r: &mut Reader<'_>, n: u32) -> Result<(), KmodelError> {
    r.skip(n as usize * 12)?;
    for _ in 0..n {
        let rank = r.u32()?;
        if rank > 64 {
            return Err(KmodelError::BadCount { part: Part::Module, count: rank });
        }
        r.skip(rank as usize * 4)?;
    }
    Ok(())
}

/// One section header, and its body skipped (unless merged into `.rdata`).
fn section<'a>(r: &mut Reader<'a>) -> Result<Section<'a>, KmodelError> {
    let name = trim(r.bytes(16)?);
    let (flags, body_start, body_size, _reserved) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    if flags & 1 == 0 {
        r.skip(body_start as usize)?;
        r.skip(body_size as usize)?;
    }
    Ok(Section { name, flags, body_start, body_size })
}
