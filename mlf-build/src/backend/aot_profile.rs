//! Profiling an AOT model kernel by kernel. TVM's main (`tvmgen_<m>___tvm_main__`) is C that
//! calls each kernel itself, so the runtime never sees the calls: with profiling on, the main's
//! file is compiled with a call of the generated module's hook before and after each kernel
//! call statement (`<hook>(i, 0);` … `<hook>(i, 1);`). With profiling off nothing here runs and
//! the C compiled is the model's own.

use std::collections::BTreeSet;

use super::aot_main::main_function;
use super::api::OperatorMemory;
use crate::error::{Error, Result};
use crate::model::{CFile, CSource, ModelDesc};
use crate::support::bytes::Bytes;

/// The hook's name before the model's symbol prefix: the generated module exports
/// `<prefix>mlf_profile_op(index, edge)`, which the instrumented C calls.
pub const HOOK_SYMBOL: &str = "mlf_profile_op";

/// The model whose main calls `hook` around each kernel call, and the kernels it calls in
/// order (operator `i` of the profile is the `i`th); `None` when the main is not in the C (an
/// LLVM object's main cannot be instrumented) or calls no kernel defined in the C.
pub(super) fn instrument(desc: &ModelDesc, hook: &str) -> Result<Option<(ModelDesc, Vec<String>)>> {
    let Some(main) = main_function(desc) else { return Ok(None) };
    let Some((src, _)) = desc.code.definition(&main) else { return Ok(None) };
    let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
    let item = src.scan.items.iter().find(|i| i.is_function_definition && i.name == main);
    let item = item.ok_or_else(|| Error::missing(format!("the definition of {main}")).in_member(src.member.clone()))?;
    // The kernels: calls of functions the model's C defines (not TVMBackend*, not mlf's
    // staging hook, not the main itself).
    let sites: Vec<_> = src
        .scan
        .call_statements(text, &main)
        .into_iter()
        .filter(|s| s.callee != main && desc.code.definition(&s.callee).is_some())
        .collect();
    if sites.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len() + 64 * sites.len());
    let mut last = 0;
    let mut push = |out: &mut String, upto: usize, with: &str| -> Result<()> {
        let piece = text.get(last..upto).filter(|_| upto >= last);
        let piece = piece.ok_or_else(|| Error::invalid("overlapping call statements").in_member(src.member.clone()))?;
        out.push_str(piece);
        out.push_str(with);
        last = upto;
        Ok(())
    };
    let decl = format!(
        "\n/* mlf: the profile hook (the generated module's), called around each kernel call of {main}. */\nvoid {hook}(unsigned int index, unsigned int edge);\n"
    );
    push(&mut out, item.range.start, &decl)?;
    for (i, s) in sites.iter().enumerate() {
        push(&mut out, s.statement, &format!("\n  {hook}({i}u, 0u);"))?;
        push(&mut out, s.end, &format!("\n  {hook}({i}u, 1u);"))?;
    }
    push(&mut out, text.len(), "")?;
    let mut rewritten = desc.clone();
    let at = desc.code.sources.iter().position(|s| s.member == src.member);
    let at = at.ok_or_else(|| Error::missing(format!("the C file {}", src.member)))?;
    let scan = CFile::scan(&out);
    rewritten.code.sources[at] = CSource { member: src.member.clone(), scan, bytes: Bytes::new(out.into_bytes()) };
    Ok(Some((rewritten, sites.into_iter().map(|s| s.callee).collect())))
}

/// The kernels the main calls (operators of the profile) with the bytes of the C's constant
/// arrays each reads (through its own body or the call's arguments). The plan places the
/// kernels' tensors in one workspace (or the C's USMP pool), not per kernel: no window.
pub(super) fn operator_memory(desc: &ModelDesc) -> Result<Vec<OperatorMemory>> {
    let Some(main) = main_function(desc) else { return Ok(Vec::new()) };
    let Some((src, _)) = desc.code.definition(&main) else { return Ok(Vec::new()) };
    let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
    let names: BTreeSet<String> = desc.code.constants.iter().map(|c| c.name.clone()).collect();
    let bytes_of = |n: &String| desc.code.constants.iter().find(|c| &c.name == n).map_or(0, |c| c.bytes);
    let mut out = Vec::new();
    for s in src.scan.call_statements(text, &main) {
        let Some((ksrc, _)) = desc.code.definition(&s.callee).filter(|_| s.callee != main) else { continue };
        let ktext = ksrc.bytes.as_str().map_err(|e| e.in_member(ksrc.member.clone()))?;
        let mut read = ksrc.scan.references(ktext, &names).remove(&s.callee).unwrap_or_default();
        read.extend(s.arg_names.iter().filter(|n| names.contains(*n)).cloned());
        out.push(OperatorMemory {
            name: s.callee.clone(),
            window: None,
            arena_bytes: 0,
            param_bytes: read.iter().map(bytes_of).sum(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_call_of_the_main_is_wrapped_in_the_hook() {
        for name in ["digits-aot-c", "digits-aot-usmp", "digits-aot-packed"] {
            wrapped(name);
        }
    }

    fn wrapped(name: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/models/{name}.tar"));
        let desc = crate::open(&path).unwrap();
        let (out, calls) = instrument(&desc, "p_mlf_profile_op").unwrap().unwrap();
        assert_eq!(calls.len(), 3, "{name}: {calls:?}");
        assert!(calls.iter().all(|c| c.starts_with("tvmgen_default_fused_")), "{calls:?}");
        let main = main_function(&out).unwrap();
        let (src, _) = out.code.definition(&main).unwrap();
        let text = src.bytes.as_str().unwrap();
        assert!(text.contains("void p_mlf_profile_op(unsigned int index, unsigned int edge);"));
        for (i, c) in calls.iter().enumerate() {
            let before = text.find(&format!("p_mlf_profile_op({i}u, 0u);")).unwrap();
            let call = before + text[before..].find(&format!("{c}(")).unwrap();
            let after = text.find(&format!("p_mlf_profile_op({i}u, 1u);")).unwrap();
            assert!(before < call && call < after, "{text}");
            // The whole statement (its `return -1;` on failure) lies between the two.
            assert!(text[call..after].contains("return -1;"), "{}", &text[call..after]);
        }
        // The memory figures name the same operators.
        let mem = operator_memory(&desc).unwrap();
        assert_eq!(mem.iter().map(|m| &m.name).collect::<Vec<_>>(), calls.iter().collect::<Vec<_>>());
        // Only the main's file changes; the kernels are the model's own.
        let changed: Vec<_> =
            desc.code.sources.iter().zip(&out.code.sources).filter(|(a, b)| a.bytes != b.bytes).collect();
        assert_eq!(changed.len(), 1);
    }
}
