//! What an AOT USMP build's workspace pool holds, as its C says it: the main's calls (the
//! picture's columns), each intermediate the main binds into the pool (`sid_3_let`) from the call
//! that first passes it to the last, and each kernel's own scratch in the pool during its call.
//! The C gives where each starts in the pool, not how many bytes it takes: they are drawn as
//! marks at their offsets.

use super::picture::{BoxKind, PlanBox};
use crate::model::{CFunction, ModelDesc};
use crate::read::csource::pool_lets;
use crate::support::names;

/// Names of an AOT main the C defines.
const MAINS: &[&str] = &["___tvm_main__", "_run_model", "tvm__run_func"];

/// The columns (the main's kernel calls) and the pool's items, the pool starting at `base` in
/// the picture; `None` when the C has no main with kernel calls.
pub fn pool_contents(desc: &ModelDesc, base: u64) -> Option<(Vec<String>, Vec<PlanBox>)> {
    let main =
        defined(desc).filter(|(f, _)| MAINS.iter().any(|m| f.name.ends_with(m))).max_by_key(|(f, _)| f.calls.len())?;
    let calls: Vec<&crate::model::CCall> = main.0.calls.iter().filter(|c| c.callee.starts_with("tvmgen_")).collect();
    if calls.is_empty() {
        return None;
    }
    let columns: Vec<String> = calls.iter().map(|c| c.callee.clone()).collect();
    let op = |c: usize| names::operator(&columns[c]).to_string();
    let mut items = Vec::new();
    for l in pool_lets(main.1).into_iter().filter(|l| workspace(&l.pool)) {
        let uses: Vec<usize> =
            (0..calls.len()).filter(|&c| calls[c].args.iter().any(|a| a.trim() == l.local)).collect();
        let (Some(&first), Some(&last)) = (uses.first(), uses.last()) else { continue };
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
        let Some((_, body)) = defined(desc).find(|(f, _)| f.name == call.callee) else { continue };
        for l in pool_lets(body).into_iter().filter(|l| workspace(&l.pool)) {
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

/// Every function the C defines, with its text.
fn defined(desc: &ModelDesc) -> impl Iterator<Item = (&CFunction, &str)> {
    desc.code.sources.iter().flat_map(|s| {
        let text = std::str::from_utf8(&s.bytes).unwrap_or("");
        s.scan.functions.iter().filter(|f| f.defined).filter_map(move |f| {
            let item = s.scan.items.iter().find(|i| i.is_function_definition && i.name == f.name)?;
            Some((f, text.get(item.range.clone())?))
        })
    })
}
