//! Section sizes of a compiled model library, for the memory report, and of a linked firmware,
//! for the board's budget.

use std::path::Path;

use crate::error::{Context, Error, Result};
use crate::plan::report::SectionSizes;

/// Sums the allocated sections of every object in a static library (`.a`) or of one object
/// file. Unwind tables (`.eh_frame`, `.ARM.exidx`…) are left out, and so is mlf's own object of
/// embedded parameters (counted as parameters).
pub fn measure_library(path: &Path) -> Result<SectionSizes> {
    let data = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
    let mut sizes = SectionSizes::default();
    match object::read::archive::ArchiveFile::parse(&*data) {
        Ok(ar) => {
            for member in ar.members() {
                let member = member.map_err(|e| Error::invalid(format!("bad archive member: {e}"))).in_file(path)?;
                let name = String::from_utf8_lossy(member.name()).into_owned();
                let bytes = member
                    .data(&*data)
                    .map_err(|e| Error::invalid(format!("bad archive member: {e}")))
                    .in_file(path)?;
                if name.starts_with('/')
                    || name == "__.SYMDEF"
                    || name.starts_with("__.SYMDEF ")
                    || is_params_object(&name)
                {
                    continue;
                }
                add_object(&mut sizes, bytes).map_err(|e| e.in_member(name)).in_file(path)?;
            }
        }
        Err(_) => add_object(&mut sizes, &data).in_file(path)?,
    }
    Ok(sizes)
}

/// Whether an archive member is mlf's object of embedded parameters (the cc crate names members
/// `<hash>-<stem>.o`).
fn is_params_object(member: &str) -> bool {
    let stem = member.strip_suffix(".o").and_then(|m| m.strip_suffix(super::embed::PARAMS_ASM_STEM));
    stem.is_some_and(|rest| rest.is_empty() || rest.ends_with('-'))
}

fn add_object(sizes: &mut SectionSizes, bytes: &[u8]) -> Result<()> {
    use object::{Object, ObjectSection, SectionKind};
    let file = object::File::parse(bytes).map_err(|e| Error::invalid(format!("not an object file: {e}")))?;
    for s in file.sections() {
        let name = s.name().unwrap_or("");
        if name.contains("eh_frame")
            || name.starts_with(".ARM.ex")
            || name.starts_with("__compact_unwind")
            || name == ".gcc_except_table"
        {
            continue;
        }
        let n = s.size();
        // Pointer tables the C declares `const` (writable only while a position-independent
        // image is relocated), and data the C places in a `.rodata*` section without declaring
        // it `const` (TVM's USMP constant pool in `.rodata.tvm`): read-only data in firmware.
        if name.starts_with(".data.rel.ro") || (name.starts_with(".rodata") && s.kind() == SectionKind::Data) {
            sizes.rodata += n;
            continue;
        }
        match s.kind() {
            SectionKind::Text => sizes.text += n,
            SectionKind::ReadOnlyData | SectionKind::ReadOnlyDataWithRel | SectionKind::ReadOnlyString => {
                sizes.rodata += n
            }
            SectionKind::Data => sizes.data += n,
            SectionKind::UninitializedData | SectionKind::Common => sizes.bss += n,
            _ => {}
        }
    }
    // Tentative definitions (`-fcommon`) have no section: they become `.bss` at link time.
    for sym in file.symbols() {
        use object::ObjectSymbol;
        if sym.is_common() {
            sizes.bss += sym.size();
        }
    }
    Ok(())
}

/// Flash and static RAM of a linked firmware, from its ELF section and program headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirmwareMemory {
    /// Bytes of the program image: every allocated section with contents (vector table, code,
    /// read-only data, the initial values of `.data`).
    pub flash: u64,
    /// Bytes of static RAM: zero-filled sections (`.bss`, `.uninit`), sections copied from
    /// their load address to another run address, and `.data`/`.sdata` (which on a machine that
    /// runs from RAM are loaded where they run). The stack is not included.
    pub ram: u64,
    /// The allocated sections: name, bytes, counted in flash, counted in RAM.
    pub sections: Vec<(String, u64, bool, bool)>,
}

/// Measures the linked ELF at `path` ([`FirmwareMemory`]).
///
/// Not Berkeley `size`, nor the sections' write flag: TVM declares its USMP constant pool
/// non-const in `.rodata.tvm`, so the linker's merged `.rodata` is writable, yet it is placed in
/// flash. riscv-rt's placeholder `.heap` and `.stack` sections are left out.
pub fn measure_firmware(path: &Path) -> Result<FirmwareMemory> {
    use object::read::elf::{ElfFile32, ElfFile64};
    let data = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
    let not_elf = |e: object::Error| Error::invalid(format!("not an ELF executable: {e}")).in_file(path);
    match object::FileKind::parse(&*data).map_err(not_elf)? {
        object::FileKind::Elf32 => Ok(firmware_of(&ElfFile32::<object::Endianness>::parse(&*data).map_err(not_elf)?)),
        object::FileKind::Elf64 => Ok(firmware_of(&ElfFile64::<object::Endianness>::parse(&*data).map_err(not_elf)?)),
        other => Err(Error::invalid(format!("a {other:?} file, not an ELF executable")).in_file(path)),
    }
}

fn firmware_of<E: object::read::elf::FileHeader<Endian = object::Endianness>>(
    file: &object::read::elf::ElfFile<'_, E>,
) -> FirmwareMemory {
    use object::read::elf::ProgramHeader;
    use object::{Object, ObjectSection, SectionFlags, SectionKind};
    let endian = file.endian();
    // (run address, load address, bytes in memory) of every loadable segment.
    let segments: Vec<(u64, u64, u64)> = file
        .elf_program_headers()
        .iter()
        .filter(|h| h.p_type(endian) == object::elf::PT_LOAD)
        .map(|h| (h.p_vaddr(endian).into(), h.p_paddr(endian).into(), h.p_memsz(endian).into()))
        .collect();
    let copied =
        |at: u64| segments.iter().any(|&(vaddr, paddr, size)| at >= vaddr && at - vaddr < size && vaddr != paddr);
    let mut m = FirmwareMemory::default();
    for s in file.sections() {
        let SectionFlags::Elf { sh_flags } = s.flags() else { continue };
        let name = s.name().unwrap_or("").to_string();
        if sh_flags & u64::from(object::elf::SHF_ALLOC) == 0 || name == ".stack" || name == ".heap" || s.size() == 0 {
            continue;
        }
        let zeroed = s.kind() == SectionKind::UninitializedData;
        let in_ram = zeroed || copied(s.address()) || name == ".data" || name == ".sdata";
        m.flash += if zeroed { 0 } else { s.size() };
        m.ram += if in_ram { s.size() } else { 0 };
        m.sections.push((name, s.size(), !zeroed, in_ram));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::is_params_object;

    #[test]
    fn only_mlfs_parameter_object_is_left_out() {
        assert!(is_params_object("60deaa371dc5767a-mlf_params.o"));
        assert!(is_params_object("mlf_params.o"));
        assert!(!is_params_object("19ce2c28e70e5954-0-default_lib0.o"));
        assert!(!is_params_object("x_mlf_params.o"));
        assert!(!is_params_object("mlf_params.c.o"));
    }
}
