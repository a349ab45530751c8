//! kmodel V5 (nncase ≥ 1.0): the header, modules, mempools, functions and sections, read for
//! `inspect` only (docs/kmodel.md §5). Running V5 models is out of scope.

use super::error::{KmodelError, Part};
use super::reader::Reader;

/// The V5 model header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// `true` for the v1.0.0+ layout (`header_size` = 32), `false` for the pre-Aug-2021 one.
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
    /// Module version.
    pub version: u32,
    /// Whole module size, header included.
    pub size: u32,
    /// Mempool count.
    pub mempools: u32,
    /// Shared mempool count.
    pub shared_mempools: u32,
    /// Section count.
    pub sections: u32,
    /// Function count.
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
        let mut r = Reader::new(bytes.get(at..).unwrap_or(&[]), at, Part::Module);
        let kind = trim(r.bytes(16)?);
        let version = r.u32()?;
        let header_size = r.u32()?;
        let size = r.u32()?;
        let mempools = r.u32()?;
        let shared_mempools = r.u32()?;
        let sections = r.u32()?;
        let functions = r.u32()?;
        let _reserved = r.u32()?;
        if (size as usize) < header_size as usize || at.checked_add(size as usize).is_none_or(|e| e > bytes.len()) {
            return Err(KmodelError::Truncated {
                part: Part::Module,
                offset: at as u64,
                needed: size as u64,
                available: (bytes.len() - at.min(bytes.len())) as u64,
            });
        }
        let module = &bytes[at..at + size as usize];
        let m = Module { kind, version, size, mempools, shared_mempools, sections, functions, offset: at };
        let mut mr = Reader::new(module, at, Part::Module);
        mr.seek(header_size as usize)?;
        if mempools > 4096 || sections > 4096 || shared_mempools > 4096 || functions > 4096 {
            return Err(KmodelError::BadCount { part: Part::Module, count: mempools.max(sections).max(functions) });
        }
        let mut pools = [Mempool { location: 0, size: 0 }; 16];
        let mut np = 0;
        for _ in 0..mempools {
            let loc = mr.u8()?;
            mr.skip(3)?;
            let size = mr.u32()?;
            if np < pools.len() {
                pools[np] = Mempool { location: loc, size };
                np += 1;
            }
        }
        mr.skip(shared_mempools as usize * 8)?;
        for _ in 0..functions {
            let fstart = mr.pos();
            let _hs = mr.u32()?;
            let fsize = mr.u32()?;
            mr.seek(
                fstart.checked_add(fsize as usize).ok_or(KmodelError::BadCount { part: Part::Module, count: fsize })?,
            )?;
        }
        // Sections: header, then padding of body_start, then the body (unless merged).
        let mut secs: [Option<Section<'a>>; 16] = [None; 16];
        let mut ns = 0;
        for _ in 0..sections {
            let name = trim(mr.bytes(16)?);
            let flags = mr.u32()?;
            let body_start = mr.u32()?;
            let body_size = mr.u32()?;
            let _res = mr.u32()?;
            if flags & 1 == 0 {
                mr.skip(body_start as usize)?;
                mr.skip(body_size as usize)?;
            }
            if ns < secs.len() {
                secs[ns] = Some(Section { name, flags, body_start, body_size });
                ns += 1;
            }
        }
        f(&m, &mut pools[..np].iter().copied(), &mut secs[..ns].iter().flatten().copied());
        at += size as usize;
    }
    Ok(at)
}
