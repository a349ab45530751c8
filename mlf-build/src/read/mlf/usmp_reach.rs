//! USMP pools held to what the kernels touch: every function that takes a pool reaches into it
//! no further than the pool's size ([`pool_reach`]), and the workspace pool's size is the same
//! in the C (`static uint8_t global_workspace[N];`), the interface header
//! (`TVMGEN_<M>_WORKSPACE_SIZE`) and `metadata.json` (`workspace_size_bytes`). The constant
//! pool's compiled size is held to the same reach when it is taken out of the C
//! (`backend::aot_pool`).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::{ModelDesc, UsmpPools};
use crate::read::csource::pool_reach;

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
            for (pool, bytes) in r.reach {
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
