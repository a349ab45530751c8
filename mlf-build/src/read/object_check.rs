//! Objects checked as compiled code, not as text: the archive's LLVM objects when they are read,
//! and every object of the model's library once mlf has compiled it (its C, the archive's objects
//! as rewritten, the slot shim). Refused, naming the member and the section or symbol:
//!
//! - a section flagged `SHF_COMPRESSED` (its header may claim any size: its raw bytes are not what
//!   the program would see, and the linker would inflate it);
//! - a relocation whose offset plus width lies outside its section (the linker would write out of
//!   bounds; rust-lld crashes on it);
//! - on Arm, RISC-V, x86-64 and AArch64, a relocation of a type compilers do not emit for a
//!   model's code and data ([`relocation_type_allowed`]: rust-lld stops with SIGILL on Arm's
//!   group relocations `R_ARM_ALU_PC_G1` — found by the `objects_link` fuzz target);
//! - code that runs at program load or exit: `.init_array`, `.fini_array`, `.preinit_array`,
//!   `.ctors`, `.dtors`, `.init`, `.fini` (by name or section type);
//! - with a `prefix` (the model's library as built): a defined global symbol without the model's
//!   private prefix — it would replace a symbol of the program (`__asm__("memcpy")` defining
//!   `memcpy` for the whole program).

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionKind};

use crate::error::{Error, Result};

/// `SHF_COMPRESSED`.
const SHF_COMPRESSED: u64 = 0x800;
/// `SHT_INIT_ARRAY`, `SHT_FINI_ARRAY`, `SHT_PREINIT_ARRAY`.
const LOAD_TIME_TYPES: [u32; 3] = [14, 15, 16];
/// Sections whose code runs at program load or exit.
const LOAD_TIME_NAMES: &[&str] =
    &[".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini"];

/// Checks the object `bytes` (the archive member or library member `member`); with `prefix`,
/// every defined global symbol must carry it.
pub fn check(member: &str, bytes: &[u8], prefix: Option<&str>) -> Result<()> {
    let fail = |why: String| Err(Error::unsupported(why).in_member(member.to_string()));
    let file = object::File::parse(bytes)
        .map_err(|e| Error::invalid(format!("not an object file: {e}")).in_member(member.to_string()))?;
    for s in file.sections() {
        let name = s.name().unwrap_or("?");
        let compressed = match s.flags() {
            SectionFlags::Elf { sh_flags } => sh_flags & SHF_COMPRESSED != 0,
            _ => false,
        };
        if compressed {
            return fail(format!(
                "section {name} is compressed (SHF_COMPRESSED): a model's object must hold its code and data as they are"
            ));
        }
        let load_time = matches!(s.kind(), SectionKind::Elf(t) if LOAD_TIME_TYPES.contains(&t))
            || LOAD_TIME_NAMES.iter().any(|n| name == *n || name.starts_with(&format!("{n}.")));
        if load_time {
            return fail(format!(
                "section {name} holds code that runs when the program starts or ends (a constructor or destructor); \
                 a model's code runs only when the model is run"
            ));
        }
        let size = s.size();
        for (offset, r) in s.relocations() {
            if let object::RelocationFlags::Elf { r_type } = r.flags()
                && relocation_type_allowed(file.architecture(), r_type) == Some(false)
            {
                return fail(format!(
                    "a relocation at offset {offset} of section {name} has type {r_type}, which compilers do not \
                     emit for a model's code and data (the linker may crash on it)"
                ));
            }
            let width = u64::from(r.size()).div_ceil(8).max(1);
            if offset.checked_add(width).is_none_or(|end| end > size) {
                return fail(format!(
                    "a relocation at offset {offset} ({width} bytes) lies outside section {name} ({size} bytes)"
                ));
            }
        }
    }
    if let Some(prefix) = prefix {
        for sym in file.symbols().filter(|s| s.is_definition() && s.is_global()) {
            let name = sym.name().unwrap_or("?");
            if !name.starts_with(prefix) {
                return fail(format!(
                    "defines the global symbol {name}, which would be the whole program's; every symbol a model \
                     defines carries its private prefix ({prefix}…) — an asm label (__asm__(\"{name}\")) or \
                     an object's symbol may not name another"
                ));
            }
        }
    }
    Ok(())
}

/// Whether ELF relocation type `r_type` is one compilers (GCC, Clang, TVM's LLVM) emit for the
/// code, data and debug sections of a model on `arch`; `None` for other architectures.
pub fn relocation_type_allowed(arch: object::Architecture, r_type: u32) -> Option<bool> {
    use object::Architecture as A;
    let allowed: &[std::ops::RangeInclusive<u32>] = match arch {
        // NONE, ABS32, REL32, ABS16, ABS8; THM_CALL, THM_PC8; GOTOFF32, BASE_PREL, GOT_BREL;
        // CALL, JUMP24, THM_JUMP24; TARGET1, V4BX, TARGET2, PREL31, the MOVW/MOVT family and
        // THM_JUMP19; THM_ALU_PREL_11_0, THM_PC12; GOT_PREL; THM_JUMP11, THM_JUMP8.
        A::Arm => &[0..=0, 2..=3, 5..=5, 8..=8, 10..=11, 24..=26, 28..=30, 38..=51, 53..=54, 96..=96, 102..=103],
        // NONE, 32, 64; BRANCH … CALL_PLT, GOT_HI20; PCREL_HI20 … LO12_S; ADD/SUB 8–64; ALIGN,
        // RVC_BRANCH, RVC_JUMP; RELAX, SUB6, SET6 … SET32, 32_PCREL; SET/SUB_ULEB128.
        A::Riscv32 | A::Riscv64 => &[0..=2, 16..=20, 23..=28, 33..=40, 43..=45, 51..=57, 60..=61],
        // NONE … PLT32, GOT32 … GOTPCREL, 32, 32S; the TLS models; PC64, GOTOFF64, GOTPC32;
        // GOTPCRELX, REX_GOTPCRELX.
        A::X86_64 => &[0..=4, 9..=11, 16..=24, 25..=26, 41..=42],
        // NONE; ABS/PREL 16–64; the MOVW family; LD_PREL_LO19 … ADD_ABS_LO12_NC, LDST and branch
        // families, LDST128; the GOT pages; TLS descriptors and IE/LE.
        A::Aarch64 => &[0..=0, 256..=286, 299..=299, 309..=313, 541..=573],
        _ => return None,
    };
    Some(allowed.iter().any(|r| r.contains(&r_type)))
}

/// Checks every object of the static library `archive` (`lib_name` in messages) with `prefix`.
pub fn check_library(lib_name: &str, archive: &[u8], prefix: &str) -> Result<()> {
    let lib = object::read::archive::ArchiveFile::parse(archive)
        .map_err(|e| Error::invalid(format!("reading the model's library: {e}")).in_member(lib_name.to_string()))?;
    for m in lib.members() {
        let m =
            m.map_err(|e| Error::invalid(format!("reading the model's library: {e}")).in_member(lib_name.to_string()))?;
        let name = String::from_utf8_lossy(m.name()).into_owned();
        let data = m.data(archive).map_err(|e| Error::invalid(e.to_string()).in_member(name.clone()))?;
        check(&format!("{lib_name}({name})"), data, Some(prefix))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use object::write::{Relocation, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, RelocationFlags, SymbolFlags, SymbolKind, SymbolScope};

    use super::*;

    /// An x86-64 object: `p_f` in `.text` (with a 4-byte relocation at `reloc_at`), `p_d` in `.data`.
    fn object(reloc_at: u64, extra_section: Option<&[u8]>) -> Vec<u8> {
        let mut obj = object::write::Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        let off = obj.append_section_data(text, &[0x90; 16], 16);
        let data = obj.section_id(StandardSection::Data);
        let d = obj.append_section_data(data, &[1, 2, 3, 4, 5, 6, 7, 8], 8);
        let sym = |name: &str, section, value, kind| Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size: 8,
            kind,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        };
        obj.add_symbol(sym("p_f", text, off, SymbolKind::Text));
        let ds = obj.add_symbol(sym("p_d", data, d, SymbolKind::Data));
        obj.add_relocation(
            text,
            Relocation {
                offset: reloc_at,
                symbol: ds,
                addend: 0,
                flags: RelocationFlags::Elf { r_type: object::elf::R_X86_64_32 },
            },
        )
        .unwrap();
        if let Some(name) = extra_section {
            let s = obj.add_section(Vec::new(), name.to_vec(), object::SectionKind::Data);
            obj.append_section_data(s, &[0; 8], 8);
        }
        obj.write().unwrap()
    }

    /// Sets `SHF_COMPRESSED` on section `name` of the ELF64 `bytes`.
    fn compress(bytes: &mut [u8], name: &str) {
        let file = object::File::parse(&bytes[..]).unwrap();
        let index = Object::section_by_name(&file, name).unwrap().index().0;
        let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
        let entsize = u16::from_le_bytes(bytes[0x3a..0x3c].try_into().unwrap()) as usize;
        let at = shoff + index * entsize + 8;
        let flags = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) | SHF_COMPRESSED;
        bytes[at..at + 8].copy_from_slice(&flags.to_le_bytes());
    }

    #[test]
    fn compiled_objects_are_checked_for_what_the_linker_would_do() {
        check("lib.o", &object(4, None), Some("p_")).unwrap();
        let e = |bytes: &[u8], prefix| check("lib.o", bytes, prefix).unwrap_err().to_string();
        let mut c = object(4, None);
        compress(&mut c, ".data");
        let m = e(&c, None);
        assert!(m.contains("lib.o") && m.contains(".data") && m.contains("SHF_COMPRESSED"), "{m}");
        for at in [13, 16, u64::MAX - 1] {
            let m = e(&object(at, None), None);
            assert!(m.contains("lib.o") && m.contains(".text") && m.contains("outside section"), "{at}: {m}");
        }
        for s in [".init_array", ".fini_array", ".ctors", ".dtors.65535", ".preinit_array"] {
            let m = e(&object(4, Some(s.as_bytes())), None);
            assert!(m.contains(s) && m.contains("starts or ends"), "{s}: {m}");
        }
        let m = e(&object(4, None), Some("q_"));
        assert!(m.contains("global symbol p_") && m.contains("q_"), "{m}");
    }

    /// The `objects_link` fuzz target's finding: an Arm object with one `R_ARM_ALU_PC_G1`
    /// relocation (type 60) in `.text` made rust-lld stop with SIGILL. Types compilers emit pass.
    #[test]
    fn relocation_types_compilers_do_not_emit_are_refused() {
        let arm = |r_type: u32| {
            let mut obj = object::write::Object::new(BinaryFormat::Elf, Architecture::Arm, Endianness::Little);
            let text = obj.section_id(StandardSection::Text);
            obj.append_section_data(text, &[0; 8], 4);
            let sym = obj.section_symbol(text);
            let reloc = Relocation { offset: 0, symbol: sym, addend: 0, flags: RelocationFlags::Elf { r_type } };
            obj.add_relocation(text, reloc).unwrap();
            obj.write().unwrap()
        };
        let m = check("lib0.o", &arm(60), None).unwrap_err().to_string();
        assert!(m.contains("lib0.o") && m.contains(".text") && m.contains("type 60"), "{m}");
        for ok in [object::elf::R_ARM_ABS32, object::elf::R_ARM_THM_PC22, object::elf::R_ARM_GOT_PREL] {
            check("lib0.o", &arm(ok), None).unwrap();
        }
        assert_eq!(relocation_type_allowed(Architecture::Riscv64, object::elf::R_RISCV_SUB16), Some(true));
        assert_eq!(relocation_type_allowed(Architecture::Riscv64, object::elf::R_RISCV_TPREL_HI20), Some(false));
        assert_eq!(relocation_type_allowed(Architecture::X86_64, object::elf::R_X86_64_REX_GOTPCRELX), Some(true));
        assert_eq!(relocation_type_allowed(Architecture::Mips, 1), None);
    }
}
