//! Section sizes of a compiled model library, for the memory report.

use std::path::Path;

use crate::error::{Context, Error, Result};
use crate::plan::report::SectionSizes;

/// Sums the allocated sections of every object in a static library (`.a`) or of one object
/// file. Unwind tables (`.eh_frame`, `.ARM.exidx`…) are left out.
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
                if name.starts_with('/') || name == "__.SYMDEF" || name.starts_with("__.SYMDEF ") {
                    continue;
                }
                add_object(&mut sizes, bytes).map_err(|e| e.in_member(name)).in_file(path)?;
            }
        }
        Err(_) => add_object(&mut sizes, &data).in_file(path)?,
    }
    Ok(sizes)
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
