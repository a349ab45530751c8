//! Taking read-only data out of a model's LLVM objects (`codegen/host/lib/*.o`), for external
//! parameters: every allocated, read-only, non-mergeable data section of at least
//! [`ArrayTable::THRESHOLD`] bytes that holds no address and defines no exported symbol becomes a
//! parameter file. Whole sections are taken, never parts: the code reaches constants through
//! relocations whose addends may point anywhere in a section (past an array's end, into its
//! middle, biased by the instruction's length), and a section moved whole keeps every such
//! address right. Which function reads which section comes from the relocations; the build step
//! retargets them (`build::retarget`).

use std::collections::{BTreeMap, BTreeSet};

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionFlags, SectionKind};

use crate::error::{Error, Result};
use crate::model::ObjectFile;
use crate::plan::split::{ArrayTable, ObjectSection as Taken, ObjectSections, Split};
use crate::support::bytes::Bytes;
use crate::support::dtype::DType;

/// The largest section alignment the parameter region honours (its base and every file in it
/// are aligned to 64).
const MAX_ALIGN: u64 = 64;

/// Takes the read-only data sections out of a model's `objects` into `split`, which must hold no
/// file yet (the sections' files come first). Returns `split` unchanged when no object has one.
pub(crate) fn take_out_sections(objects: &[ObjectFile], mut split: Split) -> Result<Split> {
    if objects.is_empty() {
        return Ok(split);
    }
    if !split.files.is_empty() {
        return Err(Error::invalid("constant sections of objects must be the first parameter files"));
    }
    let mut out = ObjectSections::default();
    let mut direct: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut callees: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in objects {
        let fail = |e: object::Error| Error::invalid(format!("not an object file: {e}")).in_member(o.member.clone());
        let file = object::File::parse(&o.bytes[..]).map_err(fail)?;
        // Checked before its sections are looked at: a foreign object's constants could not be
        // taken out, and "no constants" would hide what the member is.
        if file.format() != object::BinaryFormat::Elf {
            return Err(Error::unsupported(format!(
                "it is a {:?} object; with external parameters mlf takes constants out of ELF objects \
                 only (and retargets their relocations)",
                file.format()
            ))
            .in_member(o.member.clone()));
        }
        let first = out.sections.len();
        let taken = sections_to_take(o, &file, &mut out.kept)?;
        let mut index_of = BTreeMap::new();
        for (k, (index, name, data)) in taken.into_iter().enumerate() {
            let f = split.add(&format!("{}:{name}", o.member), DType::U8, &[data.len() as u64], &Bytes::new(data));
            out.sections.push(Taken { member: o.member.clone(), name, index, file: f });
            index_of.insert(index, first + k);
        }
        relocation_graph(&o.member, &file, &index_of, &mut direct, &mut callees);
    }
    if out.sections.is_empty() {
        return Ok(split);
    }
    match readers(&direct, &callees) {
        Some(users) => out.users = users,
        None => out.read_by_all = true,
    }
    split.objects = Some(out);
    Ok(split)
}

/// The sections of one object to take (index, name, bytes); the other read-only data it keeps is
/// added to `kept`.
fn sections_to_take(
    o: &ObjectFile,
    file: &object::File<'_>,
    kept: &mut (usize, u64),
) -> Result<Vec<(usize, String, Vec<u8>)>> {
    // Sections that exported symbols live in, and those relocations patch (they hold addresses).
    let exported: BTreeSet<usize> = file
        .symbols()
        .filter(|s| s.is_global() && s.is_definition())
        .filter_map(|s| s.section_index().map(|i| i.0))
        .collect();
    let patched: BTreeSet<usize> =
        file.sections().filter(|s| s.relocations().next().is_some()).map(|s| s.index().0).collect();
    let mut out = Vec::new();
    for s in file.sections() {
        let name = s.name().unwrap_or_default().to_string();
        let read_only = matches!(s.kind(), SectionKind::ReadOnlyData | SectionKind::ReadOnlyString);
        if !read_only || name.starts_with(".eh_frame") || s.size() == 0 {
            continue;
        }
        // Literal pools (mergeable) and members of section groups (whose member lists name
        // sections by index) stay.
        let stays = u64::from(object::elf::SHF_MERGE | object::elf::SHF_GROUP);
        let pool_or_group = matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & stays != 0);
        let take = s.kind() == SectionKind::ReadOnlyData
            && !pool_or_group
            && s.size() >= ArrayTable::THRESHOLD
            && s.align() <= MAX_ALIGN
            && !exported.contains(&s.index().0)
            && !patched.contains(&s.index().0);
        if !take {
            *kept = (kept.0 + 1, kept.1.saturating_add(s.size()));
            continue;
        }
        // The bytes as stored: a compressed section (none in practice) holds fewer than its size,
        // and is refused rather than inflated to whatever size its header claims.
        let data = s
            .data()
            .map_err(|e| Error::invalid(format!("section {name} cannot be read: {e}")).in_member(o.member.clone()))?;
        if data.len() as u64 != s.size() {
            return Err(Error::invalid(format!(
                "section {name} holds fewer bytes than its size (compressed sections are not taken out)"
            ))
            .in_member(o.member.clone()));
        }
        out.push((s.index().0, name, data.to_vec()));
    }
    Ok(out)
}

/// Which function's code reaches which taken section (`direct`) and which functions each calls
/// (`callees`), from the relocations of `o`. A reference the code makes outside any sized
/// function, or that data makes, counts for every function of the object; a call through a
/// section symbol counts as a call of every function of that section. Both go through one node
/// of the object or the section (names starting with NUL, which no symbol has), so the graph
/// grows by one edge per relocation and per function at most.
fn relocation_graph(
    member: &str,
    file: &object::File<'_>,
    taken: &BTreeMap<usize, usize>,
    direct: &mut BTreeMap<String, BTreeSet<usize>>,
    callees: &mut BTreeMap<String, BTreeSet<String>>,
) {
    // Functions of each executable section: (start, end, name), sorted.
    let mut functions: BTreeMap<usize, Vec<(u64, u64, String)>> = BTreeMap::new();
    for s in file.symbols().filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition()) {
        if let (Some(sec), Ok(name)) = (s.section_index(), s.name()) {
            let end = s.address().saturating_add(s.size().max(1));
            functions.entry(sec.0).or_default().push((s.address(), end, name.to_string()));
        }
    }
    let wide = format!("\0object:{member}");
    let section_node = |i: usize| format!("\0section:{member}:{i}");
    for (&i, list) in functions.iter_mut() {
        list.sort();
        for (_, _, f) in list.iter() {
            callees.entry(f.clone()).or_default().insert(wide.clone());
            callees.entry(section_node(i)).or_default().insert(f.clone());
        }
    }
    for s in file.sections() {
        let alloc =
            matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_ALLOC) != 0);
        if !alloc {
            continue;
        }
        let code = functions.get(&s.index().0);
        for (at, r) in s.relocations() {
            let (target_section, callee) = match r.target() {
                RelocationTarget::Symbol(i) => match file.symbol_by_index(i) {
                    Ok(sym) => {
                        let named_fn =
                            sym.kind() == object::SymbolKind::Text && sym.name().is_ok_and(|n| !n.is_empty());
                        (sym.section_index().map(|i| i.0), named_fn.then(|| sym.name().unwrap_or_default().to_string()))
                    }
                    Err(_) => continue,
                },
                RelocationTarget::Section(i) => (Some(i.0), None),
                _ => continue,
            };
            let from = code.and_then(|fs| containing(fs, at)).unwrap_or(&wide).clone();
            if let Some(&k) = target_section.and_then(|t| taken.get(&t)) {
                direct.entry(from).or_default().insert(k);
                continue;
            }
            let called = match (callee, target_section.filter(|t| functions.contains_key(t))) {
                (Some(name), _) => name,
                (None, Some(t)) => section_node(t),
                (None, None) => continue,
            };
            if code.is_some() {
                callees.entry(from).or_default().insert(called);
            }
        }
    }
}

/// The function of `fs` (sorted ranges) whose code holds `at`.
fn containing(fs: &[(u64, u64, String)], at: u64) -> Option<&String> {
    let i = fs.partition_point(|(start, _, _)| *start <= at);
    let (_, end, name) = fs.get(i.checked_sub(1)?)?;
    (at < *end).then_some(name)
}

/// Steps the reader search may take in all (a bound on hostile objects' call graphs): past it,
/// every function counts as reading every taken section (staging then holds them all).
const SEARCH_BUDGET: usize = 1_000_000;

/// For every function, the taken sections it reads directly or through the functions it calls
/// (a call cycle is followed once); `None` when the search would pass [`SEARCH_BUDGET`].
fn readers(
    direct: &BTreeMap<String, BTreeSet<usize>>,
    callees: &BTreeMap<String, BTreeSet<String>>,
) -> Option<BTreeMap<String, Vec<usize>>> {
    let names: BTreeSet<&String> = direct.keys().chain(callees.keys()).filter(|n| !n.starts_with('\0')).collect();
    let mut out = BTreeMap::new();
    let mut steps = 0usize;
    for &f in &names {
        let (mut seen, mut stack, mut read) = (BTreeSet::from([f]), vec![f], BTreeSet::new());
        while let Some(g) = stack.pop() {
            read.extend(direct.get(g).into_iter().flatten().copied());
            for h in callees.get(g).into_iter().flatten() {
                steps += 1;
                if steps > SEARCH_BUDGET {
                    return None;
                }
                if seen.insert(h) {
                    stack.push(h);
                }
            }
        }
        if !read.is_empty() {
            out.insert(f.clone(), read.into_iter().collect());
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use object::write::{Object, Relocation, SectionId, Symbol, SymbolId, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, RelocationFlags, SymbolFlags, SymbolKind, SymbolScope};

    use super::*;
    use crate::model::ModelDesc;

    /// Adds a read-only data section `name` of `len` bytes (`flags`: its ELF flags).
    fn rodata(obj: &mut Object<'_>, name: &str, len: u8, flags: u64) -> SectionId {
        let s = obj.add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::ReadOnlyData);
        obj.section_mut(s).flags = SectionFlags::Elf { sh_flags: flags };
        obj.append_section_data(s, &(0..len).collect::<Vec<u8>>(), 16);
        s
    }

    /// Adds a symbol at offset 0 of `section`.
    fn symbol(obj: &mut Object<'_>, name: &str, section: SectionId, kind: SymbolKind, global: bool) -> SymbolId {
        symbol_at(obj, name, section, 0, kind, global)
    }

    /// Adds a symbol at `value` in `section`.
    fn symbol_at(
        obj: &mut Object<'_>,
        name: &str,
        section: SectionId,
        value: u64,
        kind: SymbolKind,
        global: bool,
    ) -> SymbolId {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size: 8,
            kind,
            scope: if global { SymbolScope::Linkage } else { SymbolScope::Compilation },
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        })
    }

    /// An x86-64 object: `f` reads `.rodata.a` (through the section, pointing past its middle),
    /// `g` calls `f`, `h` reads `.rodata.b` (through a local symbol); a literal pool, a small
    /// section and one with an exported symbol stay.
    fn object() -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let alloc = u64::from(object::elf::SHF_ALLOC);
        let a = rodata(&mut obj, ".rodata.a", 64, alloc);
        let b = rodata(&mut obj, ".rodata.b", 48, alloc);
        rodata(&mut obj, ".rodata.cst16", 16, alloc | u64::from(object::elf::SHF_MERGE));
        rodata(&mut obj, ".rodata.small", 16, alloc);
        let exp = rodata(&mut obj, ".rodata.exp", 64, alloc);
        symbol(&mut obj, "exported_table", exp, SymbolKind::Data, true);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0x90; 24], 16);
        let f = symbol(&mut obj, "f", text, SymbolKind::Text, true);
        symbol_at(&mut obj, "g", text, 8, SymbolKind::Text, true);
        symbol_at(&mut obj, "h", text, 16, SymbolKind::Text, true);
        let a_sym = obj.section_symbol(a);
        let b_local = symbol(&mut obj, "b_table", b, SymbolKind::Data, false);
        let pc32 = RelocationFlags::Elf { r_type: object::elf::R_X86_64_PC32 };
        let plt32 = RelocationFlags::Elf { r_type: object::elf::R_X86_64_PLT32 };
        obj.add_relocation(text, Relocation { offset: 2, symbol: a_sym, addend: 60, flags: pc32 }).unwrap();
        obj.add_relocation(text, Relocation { offset: 10, symbol: f, addend: -4, flags: plt32 }).unwrap();
        obj.add_relocation(text, Relocation { offset: 18, symbol: b_local, addend: -4, flags: pc32 }).unwrap();
        obj.write().unwrap()
    }

    fn desc_with(bytes: Vec<u8>) -> ModelDesc {
        let mut desc =
            crate::open(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/digits-graph-linked.tar"))
                .unwrap();
        desc.code.objects = vec![ObjectFile { member: "codegen/host/lib/lib1.o".into(), bytes: Bytes::new(bytes) }];
        desc
    }

    #[test]
    fn whole_sections_become_files_and_their_readers_follow_calls() {
        let split = take_out_sections(&desc_with(object()).code.objects, Split::default()).unwrap();
        let o = split.objects.as_ref().unwrap();
        let names: Vec<&str> = o.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".rodata.a", ".rodata.b"]);
        assert_eq!(split.files.iter().map(|f| f.bytes()).collect::<Vec<_>>(), [64, 48]);
        assert_eq!(split.files[0].data[..], (0..64).collect::<Vec<u8>>()[..]);
        // The literal pool, the small section and the exported one stay.
        assert_eq!(o.kept, (3, 16 + 16 + 64));
        let users: Vec<(&str, &[usize])> = o.users.iter().map(|(f, s)| (f.as_str(), &s[..])).collect();
        assert_eq!(users, [("f", &[0][..]), ("g", &[0][..]), ("h", &[1][..])]);
        assert_eq!(o.file_count(), 2);
    }

    #[test]
    fn a_model_without_constant_sections_splits_nothing() {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0xc3], 1);
        symbol(&mut obj, "f", text, SymbolKind::Text, true);
        let split = take_out_sections(&desc_with(obj.write().unwrap()).code.objects, Split::default()).unwrap();
        assert!(split.objects.is_none() && split.files.is_empty());
    }

    #[test]
    fn a_call_graph_past_the_budget_counts_every_function_as_reading_everything() {
        // A chain of 1,500 functions: following it from each one takes about 1.1 million steps.
        let n = 1500;
        let name = |i: usize| format!("f{i}");
        let callees: BTreeMap<String, BTreeSet<String>> =
            (0..n - 1).map(|i| (name(i), BTreeSet::from([name(i + 1)]))).collect();
        let direct = BTreeMap::from([(name(n - 1), BTreeSet::from([0]))]);
        assert!(readers(&direct, &callees).is_none());
        // A shorter chain is followed: every function reads what the last one reads.
        let short: BTreeMap<String, BTreeSet<String>> = callees.into_iter().filter(|(f, _)| f.len() <= 3).collect();
        let users = readers(&BTreeMap::from([(name(99), BTreeSet::from([0]))]), &short).unwrap();
        assert_eq!(users.len(), 100);
        let section = |k: usize| Taken { member: "o".into(), name: format!(".rodata.{k}"), index: k, file: k };
        let o = ObjectSections { read_by_all: true, sections: vec![section(0), section(1)], ..Default::default() };
        assert_eq!(o.read_by("anything"), [0, 1]);
    }
}
