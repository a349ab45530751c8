//! Flash and RAM of a linked firmware, from its ELF section and program headers (not Berkeley
//! `size`, nor the sections' write flag: TVM declares its USMP constant pool non-const in
//! `.rodata.tvm`, so the linker's merged `.rodata` is writable, yet it is placed in flash).
//!
//! - **flash** (the program image): every allocated section with contents — vector table,
//!   code, read-only data, and the initial values of `.data`;
//! - **RAM**: every allocated section that is zero-filled (`.bss`, `.uninit`), copied from its
//!   load address to another run address, or is the runtime's `.data`/`.sdata` (on RV64 `virt`
//!   the whole program is loaded into RAM, so `.data` runs where it is loaded), without the
//!   stack (measured apart by painting) and riscv-rt's placeholder `.heap`/`.stack` sections;
//! - **test data**: the reference vectors the test programs carry (statics named
//!   `TESTDATA_*`), included in flash; [`Memory::program_flash`] leaves them out;
//! - **initialised data**: the symbols in `.data`/`.sdata` (statics with non-zero initial
//!   values: they cost flash and RAM and a copy at reset); [`Memory::mlf_data`] sums mlf's.

use std::path::Path;

use object::read::elf::{ElfFile, FileHeader, ProgramHeader};
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionKind};

/// One allocated section.
#[derive(Clone, Debug)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Counted in flash (has contents in the image).
    pub in_flash: bool,
    /// Counted in RAM (writable).
    pub in_ram: bool,
    /// Its run address.
    pub address: u64,
}

/// The memory figures of a linked program.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    /// Bytes of the program image (flash), test data included.
    pub flash: u64,
    /// Bytes of static RAM (`.data` + `.bss` + `.uninit`).
    pub ram: u64,
    /// Bytes of reference vectors in the image.
    pub test_data: u64,
    /// The allocated sections.
    pub sections: Vec<Section>,
    /// Every symbol in `.data`/`.sdata`: (mangled name, bytes).
    pub data_symbols: Vec<(String, u64)>,
    /// Every symbol of at least 4 KiB in `.rodata`: (mangled name, bytes).
    pub large_constants: Vec<(String, u64)>,
    /// Every symbol of at least 64 bytes in a writable section (`.bss`, `.data`, a region's
    /// section): where the linker put the statics.
    pub statics: Vec<Static>,
}

/// A static placed by the linker.
#[derive(Clone, Debug)]
pub struct Static {
    /// Its mangled name.
    pub name: String,
    /// The output section holding it.
    pub section: String,
    /// Its address.
    pub address: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Memory {
    /// The static whose mangled name holds every one of `parts` (`["6models", "5ARENA"]`).
    pub fn static_named(&self, parts: &[&str]) -> Option<&Static> {
        self.statics.iter().find(|s| parts.iter().all(|p| s.name.contains(p)))
    }

    /// Flash without the reference vectors: the firmware itself.
    pub fn program_flash(&self) -> u64 {
        self.flash - self.test_data
    }

    /// Bytes of `.data`/`.sdata` sections.
    pub fn data(&self) -> u64 {
        self.sections.iter().filter(|s| s.name == ".data" || s.name == ".sdata").map(|s| s.bytes).sum()
    }

    /// The `.data` symbols that are mlf's: its crates' (`mlf_runtime`, `mlf_kmodel`), the model's
    /// C (`mlf_`-prefixed and TVM's `tvmgen_`/`__tvm` names) and the generated module's (a path
    /// segment `module`, as the mangled name spells it).
    pub fn mlf_data(&self, module: &str) -> Vec<(String, u64)> {
        let segment = format!("{}{module}", module.len());
        self.data_symbols
            .iter()
            .filter(|(n, _)| n.contains("mlf_") || n.contains("tvm") || n.contains(&segment))
            .cloned()
            .collect()
    }
}

const SHF_ALLOC: u64 = 0x2;
const SHF_WRITE: u64 = 0x1;

/// Reads the figures of the ELF at `path`.
pub fn measure(path: &Path) -> Result<Memory, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = |e: object::Error| format!("{}: not an ELF file: {e}", path.display());
    match object::FileKind::parse(&*data).map_err(err)? {
        object::FileKind::Elf32 => {
            measure_elf(&object::read::elf::ElfFile32::<object::Endianness>::parse(&*data).map_err(err)?)
        }
        object::FileKind::Elf64 => {
            measure_elf(&object::read::elf::ElfFile64::<object::Endianness>::parse(&*data).map_err(err)?)
        }
        other => Err(format!("{}: a {other:?} file, not an ELF executable", path.display())),
    }
}

fn measure_elf<E: FileHeader<Endian = object::Endianness>>(file: &ElfFile<'_, E>) -> Result<Memory, String> {
    let endian = file.endian();
    // (run address, load address, size in memory) of every loadable segment.
    let segments: Vec<(u64, u64, u64)> = file
        .elf_program_headers()
        .iter()
        .filter(|h| h.p_type(endian) == object::elf::PT_LOAD)
        .map(|h| (h.p_vaddr(endian).into(), h.p_paddr(endian).into(), h.p_memsz(endian).into()))
        .collect();
    let copied =
        |addr: u64| segments.iter().any(|&(vaddr, paddr, size)| addr >= vaddr && addr < vaddr + size && vaddr != paddr);
    let mut m = Memory::default();
    for s in file.sections() {
        let SectionFlags::Elf { sh_flags } = s.flags() else { continue };
        let name = s.name().unwrap_or("").to_string();
        if sh_flags & SHF_ALLOC == 0 || name == ".stack" || name == ".heap" || s.size() == 0 {
            continue;
        }
        let zeroed = s.kind() == SectionKind::UninitializedData;
        let in_flash = !zeroed;
        let in_ram = zeroed || copied(s.address()) || name == ".data" || name == ".sdata";
        m.flash += if in_flash { s.size() } else { 0 };
        m.ram += if in_ram { s.size() } else { 0 };
        m.sections.push(Section { name, bytes: s.size(), in_flash, in_ram, address: s.address() });
    }
    for sym in file.symbols() {
        let Some(index) = sym.section_index() else { continue };
        let section = file.section_by_index(index).ok().and_then(|s| s.name().ok().map(str::to_string));
        let named = || (sym.name().unwrap_or("").to_string(), sym.size());
        match section.as_deref() {
            Some(".data" | ".sdata") if sym.size() > 0 => m.data_symbols.push(named()),
            Some(".rodata") if sym.size() >= 4096 => m.large_constants.push(named()),
            _ => {}
        }
        let writable = file.section_by_index(index).ok().is_some_and(|s| {
            matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & SHF_WRITE != 0 && sh_flags & SHF_ALLOC != 0)
        });
        if writable && sym.size() >= 64 {
            let (name, bytes) = named();
            let section = section.unwrap_or_default();
            m.statics.push(Static { name, section, address: sym.address(), bytes });
        }
    }
    m.test_data = file.symbols().filter(|s| s.name().is_ok_and(|n| n.contains("TESTDATA_"))).map(|s| s.size()).sum();
    Ok(m)
}
