//! What an AOT USMP build's workspace pool holds, as its C says it: the main's calls (the
//! picture's columns), each intermediate the main binds into the pool (`sid_3_let`) from the call
//! that first passes it to the last, and each kernel's own scratch in the pool during its call.
//! The C gives where each starts in the pool, not how many bytes it takes: they are drawn as
//! marks at their offsets.

use std::collections::HashMap;

use super::picture::{BoxKind, PlanBox};
use crate::model::{CFunction, ModelDesc};
use crate::read::csource::pool_lets;
use crate::support::names;

/// Names of an AOT main the C defines.
const MAINS: &[&str] = &["___tvm_main__", "_run_model", "tvm__run_func"];

/// The columns (the main's kernel calls) and the pool's items (offsets inside its `bytes`), the
/// pool starting at `base` in the picture; `None` when the C has no main with kernel calls.
pub fn pool_contents(desc: &ModelDesc, base: u64, bytes: u64) -> Option<(Vec<String>, Vec<PlanBox>)> {
    let functions = defined(desc);
    let main = functions
        .values()
        .filter(|(f, _)| MAINS.iter().any(|m| f.name.ends_with(m)))
        .max_by_key(|(f, _)| f.calls.len())?;
    let calls: Vec<&crate::model::CCall> = main.0.calls.iter().filter(|c| c.callee.starts_with("tvmgen_")).collect();
    if calls.is_empty() {
        return None;
    }
    let columns: Vec<String> = calls.iter().map(|c| c.callee.clone()).collect();
    let op = |c: usize| names::operator(&columns[c]).to_string();
    let mut items = Vec::new();
    // Where each argument is passed first and last (one pass over the calls).
    let mut uses: HashMap<&str, (usize, usize)> = HashMap::new();
    for (c, call) in calls.iter().enumerate() {
        for a in &call.args {
            uses.entry(a.trim()).and_modify(|u| u.1 = c).or_insert((c, c));
        }
    }
    let inside = |l: &crate::read::csource::PoolLet| workspace(&l.pool) && l.offset < bytes;
    for l in pool_lets(main.1).into_iter().filter(inside) {
        let Some(&(first, last)) = uses.get(l.local.as_str()) else { continue };
        let name = l.local.trim_end_matches("_let").to_string();
        let label = format!(
            "intermediate {name} of the main at offset {} of the USMP pool global_workspace: passed first to call {first} ({}), last to call {last} ({}); the C says where it starts, not its size",
            l.offset,
            op(first),
            op(last)
        );
        items.push(mark(name, label, base, l.offset, first, last));
    }
    for (c, call) in calls.iter().enumerate() {
        let Some((_, body)) = functions.get(call.callee.as_str()) else { continue };
        for l in pool_lets(body).into_iter().filter(inside) {
            let name = l.local.trim_end_matches("_let").to_string();
            let label = format!(
                "scratch {} of call {c} ({}) at offset {} of the USMP pool global_workspace; the C says where it starts, not its size",
                l.local.trim_end_matches("_let"),
                op(c),
                l.offset
            );
            items.push(mark(name, label, base, l.offset, c, c));
        }
    }
    Some((columns, items))
}

/// A pool's workspace (RAM) parameter, not its constants.
fn workspace(pool: &str) -> bool {
    pool.contains("workspace") && !pool.contains("const")
}

fn mark(name: String, label: String, base: u64, offset: u64, first: usize, last: usize) -> PlanBox {
    PlanBox { name, label, offset: base.saturating_add(offset), size: 0, first, last, kind: BoxKind::PoolItem }
}

/// Every function the C defines, by name, with its text (one pass over each file's items).
fn defined(desc: &ModelDesc) -> HashMap<&str, (&CFunction, &str)> {
    let mut out = HashMap::new();
    for s in &desc.code.sources {
        let text = std::str::from_utf8(&s.bytes).unwrap_or("");
        let ranges: HashMap<&str, &std::ops::Range<usize>> =
            s.scan.items.iter().filter(|i| i.is_function_definition).map(|i| (i.name.as_str(), &i.range)).collect();
        for f in s.scan.functions.iter().filter(|f| f.defined) {
            if let Some(body) = ranges.get(f.name.as_str()).and_then(|r| text.get((*r).clone())) {
                out.insert(f.name.as_str(), (f, body));
            }
        }
    }
    out
}
