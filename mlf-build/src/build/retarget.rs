//! Retargeting the relocations of an LLVM object whose read-only data sections became parameter
//! files: every relocation that reached a taken section (through the section's symbol or a
//! symbol inside it) reaches the same byte of the module's parameter region instead, an undefined
//! hidden symbol the generated module defines, and the taken sections leave the object.
//!
//! With explicit addends (`RELA`: x86-64, AArch64, RISC-V) the addend grows by the section's
//! offset in the region plus the symbol's offset in the section. With addends stored in the
//! patched bytes (`REL`: 32-bit Arm, x86) the stored word grows instead, for the relocation
//! types that store it as a plain 32-bit word; another type is refused, naming it.

use std::collections::BTreeMap;

use object::build::elf::{Builder, SectionData};
use object::build::{Bytes, Id};
use object::elf;

use crate::error::{Error, Result};

/// The taken sections of one object: each section's index in the object's section table and its
/// offset in the region named `symbol`.
pub struct Retarget<'a> {
    /// The region's (prefixed) symbol.
    pub symbol: &'a str,
    /// (section index, offset in the region).
    pub sections: &'a [(usize, u64)],
}

/// Rewrites `builder` (the object `member`) so no relocation reaches a taken section, and drops
/// those sections and the symbols inside them.
pub fn retarget(builder: &mut Builder<'_>, member: &str, r: &Retarget<'_>) -> Result<()> {
    let fail = |what: String| Error::unsupported(what).in_member(member.to_string());
    // Dropping sections renumbers the rest: a relocation section that names its section by a raw
    // index (no SHF_INFO_LINK) would then name another one.
    if let Some(s) = builder
        .sections
        .iter()
        .find(|s| matches!(s.data, SectionData::Relocation(_)) && s.sh_info_section.is_none() && s.sh_info != 0)
    {
        return Err(fail(format!(
            "relocation section {} names the section it patches without SHF_INFO_LINK, so sections cannot be taken out of the object",
            String::from_utf8_lossy(&s.name)
        )));
    }
    // Taken sections by id, with their offsets.
    let by_index: BTreeMap<usize, u64> = r.sections.iter().copied().collect();
    let mut taken = BTreeMap::new();
    for s in builder.sections.iter() {
        if let Some(&off) = by_index.get(&(s.id().index() + 1)) {
            taken.insert(s.id().index(), off);
        }
    }
    if taken.len() != by_index.len() {
        return Err(fail("a section to take out is not in the object".into()));
    }
    // Symbols inside taken sections: the delta a relocation through each gains.
    let mut delta = BTreeMap::new();
    for sym in builder.symbols.iter() {
        if let Some(off) = sym.section.and_then(|s| taken.get(&s.index())) {
            let d = off.checked_add(sym.st_value).and_then(|d| i64::try_from(d).ok());
            delta.insert(sym.id().index(), d.ok_or_else(|| fail("a symbol offset overflows".into()))?);
        }
    }
    let region = builder.symbols.add();
    region.name = r.symbol.as_bytes().to_vec().into();
    region.set_st_info(elf::STB_GLOBAL, elf::STT_NOTYPE);
    region.st_other = elf::STV_HIDDEN;
    region.st_shndx = elf::SHN_UNDEF;
    let region = region.id();
    let machine = builder.header.e_machine;
    // Each relocation section: retarget; with implicit addends, note the words to patch.
    let mut patches: Vec<(object::build::elf::SectionId, u64, u32, i64)> = Vec::new();
    for s in builder.sections.iter_mut() {
        let rel = s.sh_type == elf::SHT_REL;
        let target = s.sh_info_section;
        let SectionData::Relocation(relocs) = &mut s.data else { continue };
        for reloc in relocs.iter_mut() {
            let Some(d) = reloc.symbol.and_then(|id| delta.get(&id.index())).copied() else { continue };
            reloc.symbol = Some(region);
            if rel {
                let target = target.ok_or_else(|| fail("a relocation section patches no section".into()))?;
                patches.push((target, reloc.r_offset, reloc.r_type, d));
            } else {
                reloc.r_addend = reloc.r_addend.checked_add(d).ok_or_else(|| fail("an addend overflows".into()))?;
            }
        }
    }
    for (section, at, r_type, d) in patches {
        if !word_addend(machine, r_type) {
            return Err(fail(format!(
                "a relocation of type {r_type} (machine {machine}) reaches constant data with its addend inside the instruction; mlf retargets only 32-bit word addends there"
            )));
        }
        patch_word(builder, section, at, d, builder.endian).map_err(|e| e.in_member(member.to_string()))?;
    }
    for s in builder.sections.iter_mut() {
        if taken.contains_key(&s.id().index()) {
            s.delete = true;
        }
    }
    for sym in builder.symbols.iter_mut() {
        if delta.contains_key(&sym.id().index()) {
            sym.delete = true;
        }
    }
    Ok(())
}

/// Whether relocation `r_type` of `machine` (with implicit addends) stores its addend as a plain
/// 32-bit word at the patched offset.
fn word_addend(machine: u16, r_type: u32) -> bool {
    match machine {
        elf::EM_ARM => matches!(r_type, elf::R_ARM_ABS32 | elf::R_ARM_REL32 | elf::R_ARM_TARGET1 | elf::R_ARM_PREL31),
        elf::EM_386 => matches!(r_type, elf::R_386_32 | elf::R_386_PC32),
        _ => false,
    }
}

/// Adds `d` to the 32-bit word at `at` of `section`.
fn patch_word(
    builder: &mut Builder<'_>,
    section: object::build::elf::SectionId,
    at: u64,
    d: i64,
    endian: object::Endianness,
) -> Result<()> {
    let s = builder.sections.get_mut(section);
    let SectionData::Data(data) = &s.data else {
        return Err(Error::invalid("a relocation patches a section without data"));
    };
    let mut bytes = data.to_vec();
    let at = usize::try_from(at).ok().filter(|&a| a.checked_add(4).is_some_and(|e| e <= bytes.len()));
    let at = at.ok_or_else(|| Error::invalid("a relocation patches past its section's end"))?;
    let word: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
    let old = if endian == object::Endianness::Little { u32::from_le_bytes(word) } else { u32::from_be_bytes(word) };
    let new = (i64::from(old as i32)).wrapping_add(d) as u32;
    let new = if endian == object::Endianness::Little { new.to_le_bytes() } else { new.to_be_bytes() };
    bytes[at..at + 4].copy_from_slice(&new);
    s.data = SectionData::Data(Bytes::from(bytes));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use object::write::{Object, Relocation, Symbol, SymbolSection};
    use object::{
        Architecture, BinaryFormat, Endianness, Object as _, ObjectSection, ObjectSymbol, RelocationFlags,
        RelocationTarget, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
    };

    use crate::build::objects::isolate;

    /// An object of `arch` whose function `f` reaches byte `8 + addend` of a 64-byte `.rodata.k`
    /// through a relocation of `r_type` (through a local symbol at 8), and the section's index.
    fn object(arch: Architecture, r_type: u32, addend: i64) -> (Vec<u8>, usize) {
        let mut obj = Object::new(BinaryFormat::Elf, arch, Endianness::Little);
        let k = obj.add_section(Vec::new(), b".rodata.k".to_vec(), SectionKind::ReadOnlyData);
        obj.append_section_data(k, &[7u8; 64], 16);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0u8; 16], 16);
        let sym = |name: &str, section, value, kind, scope| Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size: 8,
            kind,
            scope,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        };
        let local = obj.add_symbol(sym("k_table", k, 8, SymbolKind::Data, SymbolScope::Compilation));
        obj.add_symbol(sym("f", text, 0, SymbolKind::Text, SymbolScope::Linkage));
        let flags = RelocationFlags::Elf { r_type };
        obj.add_relocation(text, Relocation { offset: 4, symbol: local, addend, flags }).unwrap();
        let bytes = obj.write().unwrap();
        let index = object::File::parse(&bytes[..]).unwrap().section_by_name(".rodata.k").unwrap().index().0;
        (bytes, index)
    }

    /// The one relocation of `.text`: its target symbol's name, its explicit addend, and the
    /// 32-bit word it patches.
    fn relocation_of(bytes: &[u8]) -> (String, i64, u32) {
        let file = object::File::parse(bytes).unwrap();
        assert!(file.section_by_name(".rodata.k").is_none(), "the taken section is gone");
        assert!(file.symbols().all(|s| s.name() != Ok("k_table")), "its symbols are gone");
        let text = file.section_by_name(".text").unwrap();
        let (at, r) = text.relocations().next().unwrap();
        let RelocationTarget::Symbol(i) = r.target() else { panic!("a symbol target") };
        let name = file.symbol_by_index(i).unwrap().name().unwrap().to_string();
        let data = text.data().unwrap();
        let word = u32::from_le_bytes(data[at as usize..at as usize + 4].try_into().unwrap());
        (name, r.addend(), word)
    }

    fn isolated(bytes: &[u8], index: usize) -> crate::error::Result<Vec<u8>> {
        let r = super::Retarget { symbol: "mlf_x_mlf_object_params", sections: &[(index, 128)] };
        isolate("lib.o", bytes, "mlf_x_", &BTreeSet::new(), Some(&r)).map(|(b, _)| b)
    }

    #[test]
    fn explicit_addends_gain_the_section_offset_and_the_symbol_offset() {
        let (bytes, index) = object(Architecture::X86_64, object::elf::R_X86_64_PC32, 32);
        let (name, addend, _) = relocation_of(&isolated(&bytes, index).unwrap());
        assert_eq!((name.as_str(), addend), ("mlf_x_mlf_object_params", 128 + 8 + 32));
    }

    #[test]
    fn word_addends_are_patched_in_place() {
        let (bytes, index) = object(Architecture::Arm, object::elf::R_ARM_ABS32, 32);
        let file = object::File::parse(&bytes[..]).unwrap();
        let data = file.section_by_name(".text").unwrap().data().unwrap();
        let before = u32::from_le_bytes(data[4..8].try_into().unwrap());
        let (name, _, after) = relocation_of(&isolated(&bytes, index).unwrap());
        assert_eq!(name, "mlf_x_mlf_object_params");
        assert_eq!(after, before + 128 + 8, "the stored addend ({before}) moved with the section");
    }

    #[test]
    fn other_implicit_addends_are_refused_by_type() {
        let (bytes, index) = object(Architecture::Arm, object::elf::R_ARM_THM_MOVW_ABS_NC, 0);
        let e = isolated(&bytes, index).unwrap_err().to_string();
        assert!(e.contains("lib.o") && e.contains(&format!("type {}", object::elf::R_ARM_THM_MOVW_ABS_NC)), "{e}");
    }
}
