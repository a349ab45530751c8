//! The graph config is not trusted alone: every tensor's dtype and shape is checked against every
//! other source the archive has — `metadata.json`'s inputs, outputs and storage sizes, the relay
//! signature, the parameters (in [`Graph::split_args`](crate::model::Graph)) — and a
//! contradiction is an error naming both sources. An AOT model's inputs and outputs are checked
//! against the interface header's `TVMGEN_<M>_<NAME>_SIZE` macros the same way. (A graph entry smaller than what a kernel
//! reads or writes would otherwise be planned too small: reads and writes past an arena slot;
//! every entry is also checked against its kernels' stores, in `extents.rs`.)
//! Every tensor of a model must also have elements and a size that fits 64 bits.

use crate::error::{Error, Result};
use crate::model::TensorInfo;
use crate::read::header::InterfaceHeader;
use crate::read::metadata::ModuleMeta;
use crate::read::relay::RelayMain;
use crate::support::dtype::{DType, tensor_bytes};

/// Checks the graph's inputs and outputs against metadata and the relay signature. (Metadata's
/// `sids` are not compared: real archives number them otherwise than their graph.) `gname` is
/// the graph config's member name.
pub(super) fn graph_against_sources(
    inputs: &[TensorInfo],
    outputs: &[TensorInfo],
    module: &ModuleMeta,
    relay: Option<&RelayMain>,
    gname: &str,
) -> Result<()> {
    let said = |t: &TensorInfo| format!("{} {:?}", t.dtype, t.shape);
    if let Some(main) = module.memory.cpu_main() {
        let by_name: std::collections::HashMap<&str, &TensorInfo> =
            inputs.iter().map(|t| (t.name.as_str(), t)).collect();
        for io in &main.inputs {
            if let Some(t) = by_name.get(io.name.as_str()) {
                against_meta(t, &io.dtype, io.size, "input", gname)?;
            }
        }
        if main.outputs.len() == outputs.len() {
            for (io, t) in main.outputs.iter().zip(outputs) {
                against_meta(t, &io.dtype, io.size, "output", gname)?;
            }
        }
    }
    if let Some(relay) = relay {
        let by_name: std::collections::HashMap<&str, &TensorInfo> =
            inputs.iter().map(|t| (t.name.as_str(), t)).collect();
        for (name, ty) in &relay.params {
            let (Some(t), Some(ty)) = (by_name.get(name.as_str()), ty) else { continue };
            if t.dtype != ty.dtype || t.shape != ty.shape {
                return Err(contradiction(
                    &format!("input {}", crate::error::shown(name)),
                    gname,
                    &said(t),
                    "the relay signature",
                    &format!("{} {:?}", ty.dtype, ty.shape),
                ));
            }
        }
        if let Some(returns) = relay.returns.as_ref().filter(|r| r.len() == outputs.len()) {
            for (i, (t, ty)) in outputs.iter().zip(returns).enumerate() {
                if t.dtype != ty.dtype || t.shape != ty.shape {
                    return Err(contradiction(
                        &format!("output {i}"),
                        gname,
                        &said(t),
                        "the relay signature",
                        &format!("{} {:?}", ty.dtype, ty.shape),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// An AOT model's inputs and outputs against the interface header's size macros
/// (`TVMGEN_<M>_<MEMBER>_SIZE`, bytes; TVM ≥ 0.10 writes one per struct member). Tensors are
/// matched to struct members by position, as the entry point passes them; a header without the
/// macros (older TVM) is not compared. `cm` is the sanitised lowercase module name.
pub(super) fn aot_against_header(
    inputs: &[TensorInfo],
    outputs: &[TensorInfo],
    header: &InterfaceHeader,
    header_name: &str,
    cm: &str,
) -> Result<()> {
    let defines: std::collections::HashMap<&str, u64> = header.defines.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let upper = cm.to_ascii_uppercase();
    for (what, tensors, members) in [("input", inputs, &header.inputs), ("output", outputs, &header.outputs)] {
        if tensors.len() != members.len() {
            continue; // the entry point's arity check reports this
        }
        for (t, member) in tensors.iter().zip(members) {
            let key = format!("TVMGEN_{upper}_{}_SIZE", member.to_ascii_uppercase());
            let Some(&size) = defines.get(key.as_str()) else { continue };
            let bytes = t.bytes();
            if size != bytes {
                return Err(Error::mismatch(format!(
                    "{what} {}: the interface header ({header_name}) says {key} {size} bytes, {} says {} {:?} \
                     ({bytes} bytes); the archive contradicts itself, and the kernels were compiled for one of them",
                    crate::error::shown(&t.name),
                    t.shape_source,
                    t.dtype,
                    t.shape
                )));
            }
        }
    }
    Ok(())
}

/// An input or output against metadata's record of it (dtype, and size in bytes).
fn against_meta(t: &TensorInfo, dtype: &str, size: u64, what: &str, gname: &str) -> Result<()> {
    let bytes = t.bytes();
    let dtype_differs = DType::parse(dtype).is_ok_and(|d| d != t.dtype);
    if dtype_differs || (size != 0 && size != bytes) {
        return Err(contradiction(
            &format!("{what} {}", crate::error::shown(&t.name)),
            gname,
            &format!("{} {:?} ({bytes} bytes)", t.dtype, t.shape),
            "metadata.json",
            &format!("{dtype} of {size} bytes"),
        ));
    }
    Ok(())
}

/// `<what>: the graph config (<gname>) says <a>, <source> says <b>`.
fn contradiction(what: &str, gname: &str, a: &str, source: &str, b: &str) -> Error {
    Error::mismatch(format!(
        "{what}: the graph config ({gname}) says {a}, {source} says {b}; the archive contradicts itself, and \
         the kernels were compiled for one of them"
    ))
}

/// Every input and output of a model has elements and a size that fits 64 bits; zero-sized and
/// absurd tensors are errors naming the tensor and where its shape came from.
pub(super) fn tensors_are_sized(inputs: &[TensorInfo], outputs: &[TensorInfo]) -> Result<()> {
    for (what, list) in [("input", inputs), ("output", outputs)] {
        for t in list {
            let name = crate::error::shown(&t.name);
            if t.shape.contains(&0) {
                return Err(Error::invalid(format!(
                    "{what} {name} has shape {:?} (from {}): a tensor without elements cannot be passed or planned",
                    t.shape, t.shape_source
                )));
            }
            tensor_bytes(t.dtype, &t.shape)
                .map_err(|e| Error::invalid(format!("{what} {name} (shape from {}): {}", t.shape_source, e.kind)))?;
        }
    }
    Ok(())
}

/// Every tensor the application passes or the model stores has a dtype mlf's runtime runs, and
/// every graph entry one TVM's storage can hold; the error names the tensor and the dtype.
pub(super) fn dtypes_run(desc: &crate::model::ModelDesc) -> Result<()> {
    use crate::error::ErrorKind::UnsupportedDtype;
    let tensors = desc.inputs.iter().map(|t| ("input", &t.name, t.dtype));
    let tensors = tensors.chain(desc.outputs.iter().map(|t| ("output", &t.name, t.dtype)));
    for (what, name, dtype) in tensors.chain(desc.params.iter().map(|p| ("parameter", &p.name, p.dtype))) {
        if let Some(why) = dtype.why_not_runnable() {
            return Err(Error::new(UnsupportedDtype(format!("{what} {}: {why}", crate::error::shown(name)))));
        }
    }
    if let crate::model::Executor::Graph(g) = &desc.executor {
        if let Some((eid, dt)) = g.graph.dltype.iter().enumerate().find(|(_, d)| !d.storable()) {
            return Err(Error::new(UnsupportedDtype(format!(
                "graph entry {eid}: {dt} is not a whole number of bytes per element, which TVM's storage cannot hold; {}",
                dt.why_not_runnable().unwrap_or_default()
            ))));
        }
    }
    Ok(())
}
