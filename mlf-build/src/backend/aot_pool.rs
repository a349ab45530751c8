//! Taking the USMP constant pool of an AOT model out of its C, for external parameters.

use super::api::Toolchain;
use crate::error::{Error, Result};
use crate::model::{AotCall, AotExec, CFile, CSource, ConstantKind, Executor, MainPool, ModelDesc};
use crate::plan::split::Split;
use crate::support::bytes::Bytes;
use crate::support::dtype::DType;

/// Takes the USMP constant pool out of an AOT model's C: compiles the file that defines
/// `global_const_workspace` for the target and reads the pool's bytes from the object, then
/// returns a copy of the model whose C no longer defines the pools or `tvmgen_<m>_run`, and whose
/// main is called directly with the constant pool (from a `ParamSource`) and the workspace pool
/// (in the arena). The split holds the one pool file.
pub(super) fn take_out_constant_pool(
    desc: &ModelDesc,
    a: &AotExec,
    toolchain: &dyn Toolchain,
) -> Result<(ModelDesc, Split)> {
    let m = crate::support::names::sanitize(&desc.name).to_ascii_lowercase();
    let run = format!("tvmgen_{m}_run");
    let (si, src) = desc
        .code
        .sources
        .iter()
        .enumerate()
        .find(|(_, s)| s.scan.globals.iter().any(|g| g.name == "global_const_workspace" && !g.is_extern))
        .ok_or_else(|| Error::missing("the definition of global_const_workspace"))?;
    let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
    let pool = toolchain.static_bytes(&src.member, text, &["global_const_workspace"])?.remove(0);
    check_pool_size(desc, &src.member, pool.len() as u64)?;
    // The pools `run` passes to the main, in its order.
    let run_item = src
        .scan
        .items
        .iter()
        .find(|i| i.name == run && i.is_function_definition)
        .ok_or_else(|| Error::missing(format!("{run} in {}", src.member)))?;
    let run_text = &text[run_item.range.clone()];
    let order = pools_in_order(run_text);
    let main_name = [format!("tvmgen_{m}___tvm_main__"), format!("tvmgen_{m}_run_model")]
        .into_iter()
        .find(|n| desc.code.definition(n).is_some())
        .ok_or_else(|| Error::missing("the AOT main function"))?;
    let (_, main) = desc.code.definition(&main_name).expect("found above");
    let workspace = a.usmp.as_ref().map_or(0, |u| u.workspace_bytes);
    let main_pools: Vec<MainPool> = order
        .iter()
        .enumerate()
        .map(|(k, &(_, constant))| MainPool {
            name: if constant { "global_const_workspace".into() } else { format!("global_workspace_{k}") },
            constant,
            bytes: if constant { pool.len() as u64 } else { workspace },
        })
        .collect();
    if main_pools.iter().filter(|p| p.constant).count() != 1 || main_pools.iter().filter(|p| !p.constant).count() > 1 {
        return Err(Error::unsupported(format!(
            "{run} passes {} pools; one constant pool and at most one workspace pool are supported",
            main_pools.len()
        )));
    }
    let n_io = desc.inputs.len() + desc.outputs.len();
    if !main.is_packed() && main.params.len() != n_io + main_pools.len() {
        return Err(Error::unsupported(format!(
            "{main_name} takes {} pointers, not {n_io} tensors and {} pools",
            main.params.len(),
            main_pools.len()
        )));
    }
    let new_text = src.scan.without_items(text, &["global_const_workspace", "global_workspace", &run]);
    let mut out = desc.clone();
    out.code.sources[si] =
        CSource { member: src.member.clone(), scan: CFile::scan(&new_text), bytes: Bytes::new(new_text.into_bytes()) };
    out.code.constants.retain(|c| c.kind != ConstantKind::Pool);
    let call = if main.is_packed() {
        AotCall::Packed { symbol: main_name.clone() }
    } else {
        AotCall::Unpacked { symbol: main_name.clone() }
    };
    out.executor = Executor::Aot(AotExec {
        call,
        style: format!("{main_name} called directly with its pools (constant pool external)"),
        usmp: None,
        workspace_bytes: 0,
        main_pools,
        ..a.clone()
    });
    let mut split = Split::default();
    split.add("global_const_workspace", DType::U8, &[pool.len() as u64], &Bytes::new(pool));
    Ok((out, split))
}

/// Refuses a constant pool smaller than what metadata records or what the kernels read.
fn check_pool_size(desc: &ModelDesc, member: &str, pool_len: u64) -> Result<()> {
    // The pool as compiled (padded to its alignment) must hold what metadata records and what
    // the kernels read.
    let recorded = desc.memory.constants_bytes;
    if pool_len < recorded {
        return Err(Error::invalid(format!(
            "global_const_workspace compiles to {} bytes but metadata.json records {recorded} \
             (constants_size_bytes); the archive is inconsistent — export it again",
            pool_len
        ))
        .in_member(member.to_string()));
    }
    // (Without the `build` feature no C is compiled: the macro alone reads only kmodels.)
    #[cfg(feature = "build")]
    if let Some((reach, f, member)) = crate::read::mlf::usmp_reach::furthest(desc)?.remove(&true) {
        if reach > pool_len {
            return Err(Error::unsupported(format!(
                "{f} reads {reach} bytes into global_const_workspace, which compiles to {} bytes; \
                 it would read past the parameters",
                pool_len
            ))
            .in_member(member));
        }
    }
    Ok(())
}

/// The pools `run`'s body passes (`&global_const_workspace`: true, `&global_workspace`: false),
/// with where each appears, in the order they appear.
fn pools_in_order(run_text: &str) -> Vec<(usize, bool)> {
    let mut order: Vec<(usize, bool)> = Vec::new();
    for (needle, constant) in [("&global_const_workspace", true), ("&global_workspace", false)] {
        let mut from = 0;
        while let Some(p) = run_text[from..].find(needle) {
            let at = from + p;
            let next = run_text[at + needle.len()..].chars().next().unwrap_or(' ');
            if !(next.is_ascii_alphanumeric() || next == '_') {
                order.push((at, constant));
            }
            from = at + needle.len();
        }
    }
    order.sort();
    order
}
