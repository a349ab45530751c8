//! LLVM objects (`codegen/host/lib/*.o`): their symbols, and a private copy of each with the
//! model's symbols renamed (like the C) and its function-pointer slots wired to mlf-runtime.
//!
//! An LLVM object built without system-lib calls the backend through weak, zero-initialised
//! data symbols (`__TVMBackendAllocWorkspace`, `__TVMBackendParallelLaunch`, …). mlf turns each
//! such definition into an undefined reference to `<prefix><slot>` and compiles a small C file
//! that defines `<prefix><slot>` as a pointer to the runtime function: the linker fills the slot,
//! no code has to run before the first call, and two models never share a slot.

use std::collections::BTreeSet;

use object::{Object, ObjectSymbol};

use super::retarget::{Retarget, retarget};
use crate::backend::object_sections::take_out_sections;
use crate::error::{Error, Result};
use crate::model::ObjectFile;
use crate::plan::params::object_offsets;
use crate::plan::split::Split;
use crate::support::bytes::Bytes;

/// Function-pointer slots and the runtime function each must point to.
pub const SLOTS: &[(&str, &str)] = &[
    ("__TVMAPISetLastError", "TVMAPISetLastError"),
    ("__TVMBackendAllocWorkspace", "TVMBackendAllocWorkspace"),
    ("__TVMBackendFreeWorkspace", "TVMBackendFreeWorkspace"),
    ("__TVMBackendParallelLaunch", "TVMBackendParallelLaunch"),
    ("__TVMBackendParallelBarrier", "TVMBackendParallelBarrier"),
];

/// Slots mlf cannot fill: extern packed calls resolved at run time by TVM's own runtime.
pub const UNSUPPORTED_SLOTS: &[&str] = &["__TVMFuncCall", "__TVMBackendGetFuncFromEnv"];

/// Global symbols an object defines (functions and data, slots excluded).
pub fn defined_symbols(member: &str, bytes: &[u8]) -> Result<BTreeSet<String>> {
    let file = object::File::parse(bytes)
        .map_err(|e| Error::invalid(format!("not an object file: {e}")).in_member(member.to_string()))?;
    Ok(file
        .symbols()
        .filter(|s| s.is_definition() && s.is_global())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| !SLOTS.iter().any(|(s, _)| s == n))
        .collect())
}

/// Gives the object a section-name table of its own when it has none: LLVM may keep section
/// names in `.strtab` beside the symbol names (TVM ≥ 0.21's `lib0.o`), which the writer
/// rebuilds as the symbol table's alone.
fn add_section_names(builder: &mut object::build::elf::Builder<'_>) {
    use object::build::elf::SectionData;
    if builder.sections.iter().any(|s| matches!(s.data, SectionData::SectionString)) {
        return;
    }
    let s = builder.sections.add();
    s.name = b".shstrtab"[..].into();
    s.sh_type = object::elf::SHT_STRTAB;
    s.sh_addralign = 1;
    s.data = SectionData::SectionString;
}

/// A private copy of an object: every symbol in `model_symbols` (defined or referenced) gets
/// `prefix`, every slot definition becomes a reference to `<prefix><slot>`, and with external
/// parameters (`taken`) the sections taken out leave it, its relocations retargeted to the
/// parameter region. Returns the new object and the slots it uses.
pub fn isolate(
    member: &str,
    bytes: &[u8],
    prefix: &str,
    model_symbols: &BTreeSet<String>,
    taken: Option<&Retarget<'_>>,
) -> Result<(Vec<u8>, Vec<&'static str>)> {
    let fail = |e: object::build::Error| {
        Error::invalid(format!("cannot rewrite the object: {e}")).in_member(member.to_string())
    };
    let mut builder = object::build::elf::Builder::read(bytes).map_err(fail)?;
    check_alignments(&builder).map_err(|e| e.in_member(member.to_string()))?;
    let mut slots = Vec::new();
    for sym in builder.symbols.iter_mut() {
        let name = String::from_utf8_lossy(&sym.name).into_owned();
        let binding = sym.st_info >> 4;
        if binding == object::elf::STB_LOCAL {
            continue;
        }
        if let Some(u) = UNSUPPORTED_SLOTS.iter().find(|s| **s == name) {
            return Err(Error::unsupported(format!(
                "the object calls extern packed functions through {u}, which only TVM's own runtime resolves"
            ))
            .in_member(member.to_string()));
        }
        if let Some((slot, _)) = SLOTS.iter().find(|(s, _)| *s == name) {
            sym.name = format!("{prefix}{name}").into_bytes().into();
            sym.section = None;
            sym.st_shndx = object::elf::SHN_UNDEF;
            sym.st_value = 0;
            sym.st_size = 0;
            sym.st_info = (object::elf::STB_GLOBAL << 4) | object::elf::STT_NOTYPE;
            if !slots.contains(slot) {
                slots.push(*slot);
            }
        } else if model_symbols.contains(&name) {
            sym.name = format!("{prefix}{name}").into_bytes().into();
        }
    }
    if let Some(taken) = taken {
        retarget(&mut builder, member, taken)?;
    }
    add_section_names(&mut builder);
    // The writer lays sections out with their sizes and alignments (checked above); a damaged
    // object it still cannot write is an error naming the member, never a panic of the build.
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut out = Vec::new();
        builder.write(&mut out).map(|()| out)
    }));
    let out = written
        .map_err(|_| Error::invalid("cannot rewrite the object: its layout is damaged").in_member(member.to_string()))?
        .map_err(fail)?;
    Ok((out, slots))
}

/// The largest section alignment an object may ask for (64 KiB: no compiler asks for more).
const MAX_SECTION_ALIGN: u64 = 1 << 16;

/// Refuses sections whose alignment is not a power of two (or 0) of at most
/// [`MAX_SECTION_ALIGN`]: the writer would overflow laying them out.
fn check_alignments(builder: &object::build::elf::Builder<'_>) -> Result<()> {
    for s in builder.sections.iter() {
        let a = s.sh_addralign;
        if a > MAX_SECTION_ALIGN || (a != 0 && !a.is_power_of_two()) {
            return Err(Error::invalid(format!(
                "section {} has alignment {a} (a power of two of at most {MAX_SECTION_ALIGN} expected)",
                String::from_utf8_lossy(&s.name)
            )));
        }
    }
    Ok(())
}

/// The C file that fills the slots: `void* <prefix><slot> = (void*)&<function>;`.
pub fn slot_shim(prefix: &str, slots: &BTreeSet<&str>) -> String {
    let mut s = String::from(
        "/* Generated by mlf: fills the function-pointer slots of this model's LLVM objects. */\n#include \"tvm/runtime/c_backend_api.h\"\n",
    );
    for (slot, function) in SLOTS {
        if slots.contains(slot) {
            s.push_str(&format!("void* {prefix}{slot} = (void*)&{function};\n"));
        }
    }
    s
}

/// The object `bytes` as an external build rewrites it (its constant sections taken out, its
/// relocations retargeted to `p_mlf_object_params`), and the bytes of the taken sections' files:
/// what an archive's `codegen/host/lib/*.o` goes through with external parameters (for fuzzing).
pub fn external_object(bytes: &[u8]) -> Result<(Vec<u8>, u64)> {
    let member = "codegen/host/lib/fuzz.o";
    let objects = [ObjectFile { member: member.to_string(), bytes: Bytes::new(bytes.to_vec()) }];
    let split = take_out_sections(&objects, Split::default())?;
    let offsets = object_offsets(&split, 64);
    let taken = offsets.get(member).map(|s| Retarget { symbol: "p_mlf_object_params", sections: s });
    let (out, _) = isolate(member, bytes, "p_", &BTreeSet::new(), taken.as_ref())?;
    Ok((out, split.files.iter().map(|f| f.bytes()).sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An x86-64 object with one function, its `.text` alignment set to `align` in the header.
    fn object_with_text_align(align: u64) -> Vec<u8> {
        use object::write::{Object, StandardSection, Symbol, SymbolSection};
        use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        let off = obj.append_section_data(text, &[0xc3], 1);
        obj.add_symbol(Symbol {
            name: b"f".to_vec(),
            value: off,
            size: 1,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        let mut bytes = obj.write().unwrap();
        let file = object::File::parse(&bytes[..]).unwrap();
        let index = object::ObjectSection::index(&file.section_by_name(".text").unwrap()).0;
        // Elf64_Ehdr: e_shoff at 0x28, e_shentsize at 0x3a; Elf64_Shdr: sh_addralign at 48.
        let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
        let entsize = u16::from_le_bytes(bytes[0x3a..0x3c].try_into().unwrap()) as usize;
        let at = shoff + index * entsize + 48;
        bytes[at..at + 8].copy_from_slice(&align.to_le_bytes());
        bytes
    }

    #[test]
    fn a_damaged_alignment_is_an_error_naming_the_member_and_the_section() {
        let none = BTreeSet::new();
        assert!(isolate("lib.o", &object_with_text_align(16), "p_", &none, None).is_ok());
        for align in [u64::MAX - 1, 3, 1 << 20] {
            let e = isolate("lib.o", &object_with_text_align(align), "p_", &none, None).unwrap_err().to_string();
            assert!(e.contains("lib.o") && e.contains(".text") && e.contains(&align.to_string()), "{e}");
        }
    }
}
