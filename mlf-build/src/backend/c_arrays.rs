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

/// The C name of the table of pointers (renamed with the model's prefix like every symbol its C
/// defines).
pub const TABLE: &str = "mlf_param_table";
/// The C name of the function pointer an AOT main calls before each call that reads arrays.
pub const STAGE_HOOK: &str = "mlf_param_stage";

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
