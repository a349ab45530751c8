//! USMP pools held to what the kernels touch: every function that takes a pool reaches into it
//! no further than the pool's size ([`pool_reach`]), and the workspace pool's size is the same
//! in the C (`static uint8_t global_workspace[N];`), the interface header
//! (`TVMGEN_<M>_WORKSPACE_SIZE`) and `metadata.json` (`workspace_size_bytes`). The constant
//! pool's compiled size is held to the same reach when it is taken out of the C
//! (`backend::aot_pool`).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::{CFunction, ModelDesc, UsmpPools};
use crate::read::csource::{elem_bytes, param_reach, pool_lets, pool_reach};

/// USMP pool parameters of an AOT function (`global_workspace_1_var`, `global_const_workspace_0_var`).
pub(crate) fn is_pool_param(name: &str) -> bool {
    name.ends_with("_var") && (name.contains("workspace") || name.contains("pool"))
}

/// Whether a pool parameter is the constant pool's.
fn is_constant(name: &str) -> bool {
    name.contains("const")
}

/// The furthest any function of `desc`'s C reaches into the constant pool (`true`) and the
/// workspace pool (`false`): bytes, and the function and member that reach there. An access
/// below a pool's start, or one whose index cannot be bounded, is refused.
pub fn furthest(desc: &ModelDesc) -> Result<BTreeMap<bool, (u64, String, String)>> {
    let mut out: BTreeMap<bool, (u64, String, String)> = BTreeMap::new();
    for s in &desc.code.sources {
        let Ok(text) = s.bytes.as_str() else { continue };
        for item in s.scan.items.iter().filter(|i| i.is_function_definition) {
            let Some(f) = s.scan.functions.iter().find(|f| f.name == item.name && f.defined) else { continue };
            let pools: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).filter(|n| is_pool_param(n)).collect();
            let Some(body) = text.get(item.range.clone()).filter(|_| !pools.is_empty()) else { continue };
            let r = pool_reach(body, &pools);
            if let Some((pool, n)) = r.unbounded.iter().next() {
                return Err(Error::unsupported(format!(
                    "{} makes {n} access(es) into {pool} whose index mlf cannot bound (loop variables \
                     of for (int32_t v = 0; v < N; ++v), locals standing for an expression, constants, \
                     + - * / % << >> &); a kernel must be shown to stay inside its pools",
                    f.name
                ))
                .in_member(s.member.clone()));
            }
            if let Some(pool) = r.below.keys().next() {
                return Err(Error::unsupported(format!(
                    "{} indexes {pool} below its start; a kernel must stay inside its pools",
                    f.name
                ))
                .in_member(s.member.clone()));
            }
            let mut reach = r.reach;
            for (pool, bytes) in passed_on(desc, f, body, &pools).map_err(|e| e.in_member(s.member.clone()))? {
                let e = reach.entry(pool).or_default();
                *e = (*e).max(bytes);
            }
            for (pool, bytes) in reach {
                let e = out.entry(is_constant(&pool)).or_insert((0, String::new(), String::new()));
                if bytes > e.0 {
                    *e = (bytes, f.name.clone(), s.member.clone());
                }
            }
        }
    }
    Ok(out)
}

/// Refuses a workspace pool whose sizes disagree or that is smaller than what the kernels touch,
/// and kernels that reach past the constant pool `metadata.json` records.
pub(super) fn check(
    desc: &ModelDesc,
    usmp: &UsmpPools,
    header: Option<(u64, &str)>,
    metadata: Option<u64>,
) -> Result<()> {
    let c = usmp.workspace_bytes;
    let disagree = |what: String| {
        Error::invalid(format!(
            "the USMP workspace pool is {c} bytes in the C (global_workspace) but {what}; the archive is \
             inconsistent — export it again"
        ))
    };
    if let Some((h, name)) = header.filter(|(h, _)| *h != c) {
        return Err(disagree(format!("{h} in {name}")));
    }
    if let Some(m) = metadata.filter(|m| *m != c) {
        return Err(disagree(format!("{m} in metadata.json (workspace_size_bytes)")));
    }
    let far = furthest(desc)?;
    let sizes = [(false, Some(c), "global_workspace"), (true, usmp.constant_bytes, "global_const_workspace")];
    for (constant, size, pool) in sizes {
        let (Some(size), Some((reach, f, member))) = (size, far.get(&constant)) else { continue };
        if *reach > size {
            return Err(Error::unsupported(format!(
                "{f} reaches {reach} bytes into {pool}, which is {size} bytes; a pool smaller than what \
                 its kernels touch would be read or written out of bounds"
            ))
            .in_member(member.clone()));
        }
    }
    Ok(())
}

/// Where the pointers into pools that function `f` (its definition `body`) passes to other
/// functions reach: for each call argument that is a pointer bound into a pool
/// (`void* sid_1_let = (&(global_workspace_1_var[128]));`), its offset plus how far the callee
/// reaches through that parameter ([`param_reach`]). A callee the C does not define, or whose
/// reach cannot be bounded, is refused.
fn passed_on(desc: &ModelDesc, f: &CFunction, body: &str, pools: &[&str]) -> Result<Vec<(String, u64)>> {
    let lets: BTreeMap<String, (String, u64)> = pool_lets(body)
        .into_iter()
        .filter(|l| pools.contains(&l.pool.as_str()))
        .map(|l| (l.local, (l.pool, l.offset)))
        .collect();
    let mut out = Vec::new();
    for call in &f.calls {
        for (k, arg) in call.args.iter().enumerate() {
            let mut words = arg.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            let Some(name) = words.find(|w| lets.contains_key(*w)) else { continue };
            let (pool, offset) = &lets[name];
            let refuse = |why: &str| {
                Err(Error::unsupported(format!(
                    "{} passes {name} (at {offset} in {pool}) to {}, {why}; a pointer into a pool must be \
                     shown to stay inside it",
                    f.name, call.callee
                )))
            };
            if arg.trim() != name {
                // An access `((T*)name)[i]` inside the argument is counted where it stands; the
                // pointer itself passed on inside an expression is not followed.
                if !only_accessed(arg, name) {
                    return refuse("as an expression mlf does not follow");
                }
                continue;
            }
            let Some((src, callee)) = desc.code.definition(&call.callee) else {
                return refuse("which the C does not define");
            };
            let Some(param) = callee.params.get(k) else { return refuse("which takes fewer parameters") };
            if is_pool_param(&param.name) {
                continue;
            }
            let text = src.bytes.as_str().ok().and_then(|t| {
                let item = src.scan.items.iter().find(|i| i.is_function_definition && i.name == callee.name)?;
                t.get(item.range.clone())
            });
            let declared = elem_bytes(param.ty.trim_end_matches(|c: char| c == '*' || c.is_whitespace()).trim());
            // Padding kernels index before their input only where a guard excludes it
            // (`(1 <= i) ? p0[i - 41] : 0`): the evaluator reads the guard.
            let Some((low, bytes)) = text.and_then(|t| param_reach(t, &param.name, declared)) else {
                return refuse(&format!("whose accesses through {} mlf cannot bound", param.name));
            };
            let start = i64::try_from(*offset).ok().and_then(|o| o.checked_add(low));
            if start.is_none_or(|start| start < 0) {
                let before = start.map_or(low.unsigned_abs(), i64::unsigned_abs);
                return refuse(&format!(
                    "which reads {before} bytes before the start of {pool} through {}",
                    param.name
                ));
            }
            out.push((pool.clone(), offset.saturating_add(bytes)));
        }
    }
    Ok(out)
}

/// Whether every occurrence of the word `name` in `arg` is the pointer of an access
/// `((T*)name)[…]`.
fn only_accessed(arg: &str, name: &str) -> bool {
    let mut from = 0;
    while let Some(p) = arg[from..].find(name) {
        let at = from + p;
        from = at + name.len();
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let word = !arg[..at].ends_with(ident) && !arg[from..].starts_with(ident);
        let after: String = arg[from..].chars().filter(|c| !c.is_whitespace()).take(2).collect();
        if word && after != ")[" {
            return false;
        }
    }
    true
}
