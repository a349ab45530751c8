//! Taking per-operator constant arrays out of a model's C, for external parameters: every
//! `static const` array of at least [`ArrayTable::THRESHOLD`] bytes is read from the object the
//! compiler makes of its file, becomes a parameter file, and its definition is replaced by a
//! macro that reads it through a table of pointers (`mlf_param_table[k]`) the generated module
//! points at the loaded or staged bytes. Which function reads which array comes from the C
//! scanner; an AOT main calls `mlf_param_stage(i)` before each call that reads arrays.

use std::collections::{BTreeMap, BTreeSet};

use super::api::Toolchain;
use crate::error::{Error, Result};
use crate::model::{CFile, CSource, ConstantKind, ModelDesc};
use crate::plan::split::{ArrayTable, Split};
use crate::support::bytes::Bytes;
use crate::support::dtype::DType;

/// The C names of the table and the stage hook.
const TABLE: &str = ArrayTable::TABLE_SYMBOL;
const STAGE_HOOK: &str = ArrayTable::HOOK_SYMBOL;

/// An array to take out: its name, file, element type and bytes.
struct Taken {
    name: String,
    member: String,
    elem: String,
    bytes: Vec<u8>,
}

/// Takes the constant arrays out of `desc`'s C into `split` (which may already hold the graph's
/// parameters) and returns the model whose C reads them through the table. `main`: the AOT main,
/// before whose calls the C stages arrays.
pub(super) fn take_out_arrays(
    desc: &ModelDesc,
    main: Option<&str>,
    mut split: Split,
    toolchain: &dyn Toolchain,
) -> Result<(ModelDesc, Split)> {
    let (taken, kept) = extract(desc, toolchain)?;
    let mut table = ArrayTable { kept, ..ArrayTable::default() };
    for t in &taken {
        let dtype = c_dtype(&t.elem);
        let n = t.bytes.len() as u64 / dtype.elem_bytes().max(1);
        let file = split.add(&t.name, dtype, &[n], &Bytes::new(t.bytes.clone()));
        table.slots.push((t.name.clone(), file));
    }
    let slot_of: BTreeMap<&str, usize> = taken.iter().enumerate().map(|(k, t)| (t.name.as_str(), k)).collect();
    let names: BTreeSet<String> = taken.iter().map(|t| t.name.clone()).collect();
    let readers = readers(desc, &names);
    for (f, read) in &readers {
        table.users.insert(f.clone(), read.iter().map(|n| slot_of[n.as_str()]).collect());
    }
    let mut hooks = BTreeMap::new();
    if let Some(main) = main {
        let (steps, at) = main_steps(desc, main, &names, &readers)?;
        table.steps =
            steps.into_iter().map(|(f, read)| (f, read.iter().map(|n| slot_of[n.as_str()]).collect())).collect();
        hooks = at;
    }
    let out = rewrite(desc, &taken, &hooks, !table.steps.is_empty())?;
    split.arrays = Some(table);
    Ok((out, split))
}

/// Reads every array of at least the threshold from the compiled objects (one compilation per
/// file); returns them in file order and how many smaller ones stay (and their bytes).
fn extract(desc: &ModelDesc, toolchain: &dyn Toolchain) -> Result<(Vec<Taken>, (usize, u64))> {
    let mut taken = Vec::new();
    let mut kept = (0, 0);
    for src in &desc.code.sources {
        let arrays: Vec<&str> = desc
            .code
            .constants
            .iter()
            .filter(|c| c.kind == ConstantKind::StaticArray && c.member == src.member)
            .map(|c| c.name.as_str())
            .collect();
        if arrays.is_empty() {
            continue;
        }
        let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
        let bytes = toolchain.static_bytes(&src.member, text, &arrays)?;
        for (name, bytes) in arrays.into_iter().zip(bytes) {
            if (bytes.len() as u64) < ArrayTable::THRESHOLD {
                kept = (kept.0 + 1, kept.1 + bytes.len() as u64);
                continue;
            }
            let g = src.scan.globals.iter().find(|g| g.name == name && !g.is_extern);
            let elem = g.and_then(|g| g.ty.split_whitespace().last()).unwrap_or("uint8_t").to_string();
            taken.push(Taken { name: name.to_string(), member: src.member.clone(), elem, bytes });
        }
    }
    Ok((taken, kept))
}

/// The dtype of a C element type (bytes for one the table does not know).
fn c_dtype(elem: &str) -> DType {
    let tvm = match elem {
        "float" => "float32",
        "double" => "float64",
        "int8_t" | "char" => "int8",
        "uint8_t" => "uint8",
        "int16_t" => "int16",
        "uint16_t" => "uint16",
        "int32_t" | "int" => "int32",
        "uint32_t" => "uint32",
        "int64_t" => "int64",
        "uint64_t" => "uint64",
        _ => "uint8",
    };
    DType::parse(tvm).unwrap_or(DType::U8)
}

/// For every function the C defines, the arrays it reads: those its definition names and those
/// of the functions it calls, transitively (a call cycle is followed once).
fn readers(desc: &ModelDesc, names: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut direct: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut callees: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for src in &desc.code.sources {
        let Ok(text) = src.bytes.as_str() else { continue };
        direct.extend(src.scan.references(text, names));
        for f in src.scan.functions.iter().filter(|f| f.defined) {
            callees.entry(&f.name).or_default().extend(f.calls.iter().map(|c| c.callee.as_str()));
        }
    }
    let mut out = BTreeMap::new();
    for &f in callees.keys() {
        // Depth-first over the call graph with a visited set: linear in its size.
        let (mut seen, mut stack, mut read) = (BTreeSet::from([f]), vec![f], BTreeSet::new());
        while let Some(g) = stack.pop() {
            read.extend(direct.get(g).into_iter().flatten().cloned());
            for &h in callees.get(g).into_iter().flatten() {
                if callees.contains_key(h) && seen.insert(h) {
                    stack.push(h);
                }
            }
        }
        if !read.is_empty() {
            out.insert(f.to_string(), read);
        }
    }
    out
}

/// The calls of the AOT `main` that read arrays (through the callee or its arguments), in
/// order, and where the statement of each begins (member → offsets, with the step's index).
type Steps = (Vec<(String, BTreeSet<String>)>, BTreeMap<String, Vec<(usize, usize)>>);

fn main_steps(
    desc: &ModelDesc,
    main: &str,
    names: &BTreeSet<String>,
    readers: &BTreeMap<String, BTreeSet<String>>,
) -> Result<Steps> {
    let (src, _) = desc.code.definition(main).ok_or_else(|| Error::missing(format!("the definition of {main}")))?;
    let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
    let sites = src.scan.call_statements(text, main);
    let in_args: BTreeSet<&String> =
        sites.iter().flat_map(|s| s.arg_names.iter()).filter(|n| names.contains(*n)).collect();
    let own = src.scan.references(text, names).remove(main).unwrap_or_default();
    if let Some(n) = own.iter().find(|n| !in_args.contains(n)) {
        return Err(Error::unsupported(format!(
            "{main} reads the constant array {n} outside the arguments of a call, so it cannot be staged call by call"
        ))
        .in_member(src.member.clone()));
    }
    let (mut steps, mut at) = (Vec::new(), Vec::new());
    for s in sites {
        let mut read: BTreeSet<String> = readers.get(&s.callee).cloned().unwrap_or_default();
        read.extend(s.arg_names.iter().filter(|n| names.contains(*n)).cloned());
        if !read.is_empty() {
            at.push((s.statement, steps.len()));
            steps.push((s.callee, read));
        }
    }
    Ok((steps, BTreeMap::from([(src.member.clone(), at)])))
}

/// The model whose C no longer defines the taken arrays: each definition replaced by a macro
/// reading the table, the table defined in the first file that needs it (declared in the
/// others), and in the main's file the stage hook and its calls before each step.
fn rewrite(
    desc: &ModelDesc,
    taken: &[Taken],
    hooks: &BTreeMap<String, Vec<(usize, usize)>>,
    staged: bool,
) -> Result<ModelDesc> {
    let k = taken.len();
    let mut out = desc.clone();
    let mut defined = false;
    for (si, src) in desc.code.sources.iter().enumerate() {
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for (slot, t) in taken.iter().enumerate().filter(|(_, t)| t.member == src.member) {
            let item = src.scan.items.iter().find(|i| i.name == t.name && !i.is_function_definition);
            let item = item.ok_or_else(|| Error::missing(format!("the definition of {}", t.name)))?;
            let text = format!("\n#define {} ((const {} *){TABLE}[{slot}])\n", t.name, t.elem);
            edits.push((item.range.clone(), text));
        }
        let hook_at = hooks.get(&src.member).filter(|_| staged).cloned().unwrap_or_default();
        for &(at, step) in &hook_at {
            let call = format!("\n  if ({STAGE_HOOK} != 0 && {STAGE_HOOK}({step}) != 0) return -1;");
            edits.push((at..at, call));
        }
        if edits.is_empty() {
            continue;
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut prelude = if defined {
            format!("\nextern const void *{TABLE}[{k}];\n")
        } else {
            format!(
                "\n/* mlf: the constant arrays' addresses, set by the generated module. */\nconst void *{TABLE}[{k}];\n"
            )
        };
        defined = true;
        if !hook_at.is_empty() {
            prelude.push_str(&format!("typedef int (*mlf_stage_fn)(int);\nmlf_stage_fn {STAGE_HOOK};\n"));
        }
        edits[0].1.insert_str(0, &prelude);
        let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
        let new_text =
            apply(text, &edits).ok_or_else(|| Error::invalid("overlapping edits").in_member(src.member.clone()))?;
        let scan = CFile::scan(&new_text);
        if !hook_at.is_empty() && !scan.exported_symbols().any(|e| e == STAGE_HOOK) {
            return Err(
                Error::invalid(format!("the rewritten C does not define {STAGE_HOOK}")).in_member(src.member.clone())
            );
        }
        out.code.sources[si] = CSource { member: src.member.clone(), scan, bytes: Bytes::new(new_text.into_bytes()) };
    }
    if k > 0 && !out.code.sources.iter().any(|s| s.scan.exported_symbols().any(|e| e == TABLE)) {
        return Err(Error::invalid(format!("the rewritten C does not define {TABLE}")));
    }
    let gone: BTreeSet<&str> = taken.iter().map(|t| t.name.as_str()).collect();
    out.code.constants.retain(|c| !gone.contains(c.name.as_str()));
    Ok(out)
}

/// `text` with `edits` (sorted, not overlapping) applied; `None` when two overlap.
fn apply(text: &str, edits: &[(std::ops::Range<usize>, String)]) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (r, with) in edits {
        if r.start < last || r.end > text.len() {
            return None;
        }
        out.push_str(text.get(last..r.start)?);
        out.push_str(with);
        last = r.end;
    }
    out.push_str(text.get(last..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives each array bytes of its recorded size, counting the compilations.
    struct FakeCompiler<'a>(&'a ModelDesc, std::cell::Cell<usize>);

    impl Toolchain for FakeCompiler<'_> {
        fn static_bytes(&self, _: &str, _: &str, symbols: &[&str]) -> Result<Vec<Vec<u8>>> {
            self.1.set(self.1.get() + 1);
            let size = |s: &str| self.0.code.constants.iter().find(|c| c.name == s).map_or(0, |c| c.bytes as usize);
            Ok(symbols.iter().enumerate().map(|(k, s)| vec![k as u8 + 1; size(s)]).collect())
        }
    }

    fn digits_aot_c() -> ModelDesc {
        crate::open(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/digits-aot-c.tar")).unwrap()
    }

    const MAIN: &str = "tvmgen_default___tvm_main__";

    #[test]
    fn arrays_become_files_read_through_the_table() {
        let desc = digits_aot_c();
        let fake = FakeCompiler(&desc, std::cell::Cell::new(0));
        let (out, split) = take_out_arrays(&desc, Some(MAIN), Split::default(), &fake).unwrap();
        assert_eq!(fake.1.get(), 1, "one compilation for the file's four arrays");
        let t = split.arrays.as_ref().unwrap();
        assert_eq!(t.slots.len(), 4);
        assert_eq!(split.files.iter().map(|f| f.bytes()).sum::<u64>(), 9640);
        assert_eq!(t.kept, (0, 0));
        // The main's two dense calls read two arrays each; softmax reads none.
        let steps: Vec<(&str, usize)> = t.steps.iter().map(|(f, s)| (f.as_str(), s.len())).collect();
        assert_eq!(
            steps,
            vec![
                ("tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu", 2),
                ("tvmgen_default_fused_nn_contrib_dense_pack_add", 2)
            ]
        );
        let (_, text) =
            out.code.sources.iter().map(|s| (s, s.bytes.as_str().unwrap())).find(|(_, t)| t.contains(TABLE)).unwrap();
        assert!(text.contains("#define fused_constant ((const float *)mlf_param_table[3])"), "{text}");
        assert!(!text.contains("fused_constant[2048]"), "the definition is gone");
        let hook = text.find("mlf_param_stage(0)").unwrap();
        assert!(
            text[hook..]
                .trim_start_matches(|c| c != '\n')
                .trim_start()
                .starts_with("if (tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu(")
        );
        assert!(out.code.constants.is_empty());
        // Every array of the model is read by some function.
        let read: BTreeSet<usize> = t.users.values().flatten().copied().collect();
        assert_eq!(read.len(), 4);
    }

    #[test]
    fn small_arrays_stay_in_the_c() {
        let mut desc = digits_aot_c();
        // The 40-byte bias recorded as 24 bytes: under the threshold.
        let c = desc.code.constants.iter_mut().find(|c| c.bytes == 40).unwrap();
        c.bytes = 24;
        let name = c.name.clone();
        let fake = FakeCompiler(&desc, std::cell::Cell::new(0));
        let (out, split) = take_out_arrays(&desc, Some(MAIN), Split::default(), &fake).unwrap();
        assert_eq!(split.arrays.as_ref().unwrap().kept, (1, 24));
        assert_eq!(split.files.len(), 3);
        assert_eq!(out.code.constants.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec![name.as_str()]);
    }

    #[test]
    fn a_main_reading_an_array_outside_a_call_is_refused() {
        let mut desc = digits_aot_c();
        let si = desc.code.sources.iter().position(|s| s.scan.definition(MAIN).is_some()).unwrap();
        let text = desc.code.sources[si].bytes.as_str().unwrap().replacen(
            "void* sid_1 =",
            "const void* peek = fused_constant;\n  void* sid_1 =",
            1,
        );
        desc.code.sources[si] = CSource {
            member: desc.code.sources[si].member.clone(),
            scan: CFile::scan(&text),
            bytes: Bytes::new(text.into_bytes()),
        };
        let fake = FakeCompiler(&desc, std::cell::Cell::new(0));
        let e = take_out_arrays(&desc, Some(MAIN), Split::default(), &fake).unwrap_err().to_string();
        assert!(e.contains("fused_constant") && e.contains("outside the arguments of a call"), "{e}");
    }
}
