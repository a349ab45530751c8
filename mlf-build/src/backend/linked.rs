//! Taking TVM 0.8's linked parameters out of a graph model's C: the `__tvm_param__*` arrays that
//! `_lookup_linked_param` returns are read from the object the compiler makes of their file and
//! become ordinary graph parameters (read from parameter files like those of a `.params` file);
//! their definitions are replaced by null pointers, so the lookup, which mlf no longer calls,
//! still compiles.

use std::collections::BTreeSet;

use super::api::Toolchain;
use crate::error::{Error, Result};
use crate::model::{CFile, CSource, ModelDesc};
use crate::support::bytes::Bytes;
use crate::support::dtype::tensor_bytes;

/// The model with every linked parameter turned into an ordinary one whose bytes come from the
/// compiled C (checked against the graph's size, and against the `.params` copy when the archive
/// has one), and whose C no longer holds them.
pub(super) fn unlink_params(desc: &ModelDesc, toolchain: &dyn Toolchain) -> Result<ModelDesc> {
    let mut out = desc.clone();
    let mut gone = BTreeSet::new();
    for (si, src) in desc.code.sources.iter().enumerate() {
        let here: Vec<(usize, &str)> = desc
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.linked.as_deref().map(|s| (i, s)))
            .filter(|(_, s)| src.scan.globals.iter().any(|g| g.name == *s && !g.is_extern))
            .collect();
        if here.is_empty() {
            continue;
        }
        let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
        let symbols: Vec<&str> = here.iter().map(|(_, s)| *s).collect();
        let bytes = toolchain.static_bytes(&src.member, text, &symbols)?;
        let mut edits = Vec::new();
        for ((i, sym), data) in here.into_iter().zip(bytes) {
            let p = &mut out.params[i];
            // The compiler may pad an array to its alignment; the graph's size is what counts.
            let n = usize::try_from(tensor_bytes(p.dtype, &p.shape)?)
                .map_err(|_| Error::invalid(format!("linked parameter {} is too large", p.name)))?;
            if data.len() < n || (!p.data.is_empty() && p.data[..] != data[..n]) {
                return Err(Error::mismatch(format!(
                    "linked parameter {} ({sym}): the C holds {} bytes that differ from the {n} bytes of its .params copy",
                    p.name,
                    data.len()
                ))
                .in_member(src.member.clone()));
            }
            p.data = Bytes::new(data[..n].to_vec());
            p.linked = None;
            let item = src.scan.items.iter().find(|it| it.name == sym && !it.is_function_definition);
            let item = item.ok_or_else(|| Error::missing(format!("the definition of {sym}")))?;
            let elem = src.scan.globals.iter().find(|g| g.name == sym).and_then(|g| g.ty.split_whitespace().last());
            let define = format!(
                "\n/* mlf: {sym} is read from the model's parameter files. */\n#define {sym} ((const {} *)0)\n",
                elem.unwrap_or("void")
            );
            edits.push((item.range.clone(), define));
            gone.insert(sym.to_string());
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut new_text = String::with_capacity(text.len());
        let mut last = 0;
        for (r, with) in &edits {
            new_text.push_str(text.get(last..r.start).ok_or_else(|| Error::invalid("overlapping definitions"))?);
            new_text.push_str(with);
            last = r.end;
        }
        new_text.push_str(&text[last..]);
        out.code.sources[si] = CSource {
            member: src.member.clone(),
            scan: CFile::scan(&new_text),
            bytes: Bytes::new(new_text.into_bytes()),
        };
    }
    if let Some(p) = out.params.iter().find(|p| p.linked.is_some()) {
        return Err(Error::missing(format!("the definition of linked parameter {}", p.name)));
    }
    out.code.constants.retain(|c| !gone.contains(&c.name));
    Ok(out)
}
