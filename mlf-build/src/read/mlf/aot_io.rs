//! The inputs and outputs of an AOT module: their order and names from the interface header
//! (else metadata in relay order, else the entry's arity and relay order), their types from
//! every source the archive has ([`super::aot_types`]).

use super::aot_types::{Evidence, Resolved, c_dtypes};
use super::outputs::output_names;
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::read::header::InterfaceHeader;
use crate::read::metadata::{IoMeta, MainMemory, ModuleMeta};
use crate::read::relay::{RelayMain, TensorType};
use crate::support::dtype::{DType, tensor_bytes};
use crate::support::names;

/// What the inputs and outputs are worked out from.
pub(super) struct Sources<'a> {
    pub(super) module: &'a ModuleMeta,
    pub(super) header: Option<&'a InterfaceHeader>,
    /// The interface header's member name.
    pub(super) header_name: &'a str,
    pub(super) relay: Option<&'a RelayMain>,
    pub(super) main_meta: &'a MainMemory,
    /// The number of tensors the unpacked entry takes, when there is one.
    pub(super) entry_arity: Option<usize>,
    /// The C function the entry (or the main it forwards to) is.
    pub(super) entry_fn: &'a CFunction,
}

/// An input as found: raw name, its relay type (and which parameter), and where its name and
/// order came from.
struct Candidate {
    raw: String,
    relay: Option<TensorType>,
    order: String,
}

/// Works out AOT inputs and outputs.
pub(super) fn resolve_aot_io(desc: &mut ModelDesc, src: &Sources<'_>) -> Result<()> {
    let (header, relay, main_meta) = (src.header, src.relay, src.main_meta);
    let n_out = header
        .map(|h| h.outputs.len())
        .filter(|&n| n > 0)
        .or_else(|| relay.and_then(|r| r.returns.as_ref()).map(Vec::len).filter(|&n| n > 0))
        .or_else(|| (!main_meta.outputs.is_empty()).then_some(main_meta.outputs.len()))
        .unwrap_or(1);
    let candidates = input_candidates(desc, src, n_out)?;
    let mut out_names: Vec<String> = match header {
        Some(h) if !h.outputs.is_empty() => h.outputs.clone(),
        _ => output_names(n_out, relay, src.module),
    };
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n_out {
            out_names = names.clone();
        }
    }
    // The main's parameters are typed only when it is called unpacked.
    let main = (!src.entry_fn.is_packed()).then_some(src.entry_fn);
    let mut inputs = Vec::new();
    for (i, c) in candidates.into_iter().enumerate() {
        let ev = input_evidence(desc, src, main, i, &c);
        let r = ev.resolve()?;
        inputs.push((c.raw, r, Some(c.order)));
    }
    let in_bytes = inputs
        .iter()
        .try_fold(0u64, |acc, (_, r, _)| tensor_bytes(r.ty.dtype, &r.ty.shape).ok().and_then(|b| acc.checked_add(b)));
    let c_meta_shapes = c_metadata_shapes(desc, "outputs");
    let mut outputs = Vec::new();
    for (i, name) in out_names.iter().enumerate() {
        let mut ev = output_evidence(desc, src, main, (i, name, n_out), inputs.len());
        ev.c_meta_shape = c_meta_shapes.get(i).cloned();
        if n_out == 1 {
            ev.call_dtype = relay.and_then(|r| r.final_dtype);
            ev.rest_bytes = in_bytes.and_then(|b| main_meta.io_size_bytes.checked_sub(b)).filter(|&b| b > 0);
        }
        let r = ev.resolve()?;
        outputs.push((name.clone(), r, None));
    }
    desc.inputs = tensors(desc, inputs).at("inputs")?;
    desc.outputs = tensors(desc, outputs).at("outputs")?;
    Ok(())
}

/// The inputs in order, with their relay types: from the interface header, else metadata (in
/// relay order), else the entry's arity and relay order.
fn input_candidates(desc: &mut ModelDesc, src: &Sources<'_>, n_out: usize) -> Result<Vec<Candidate>> {
    let relay_params: Vec<(String, Option<TensorType>)> = src.relay.map(|r| r.params.clone()).unwrap_or_default();
    let mut inputs = Vec::new();
    if let Some(h) = src.header {
        for c in &h.inputs {
            let (raw, relay) = match relay_params.iter().find(|(raw, _)| names::sanitize(raw) == *c) {
                Some((raw, ty)) => (raw.clone(), ty.clone()),
                None => (c.clone(), None),
            };
            inputs.push(Candidate { raw, relay, order: "interface header".into() });
        }
    } else if !src.main_meta.inputs.is_empty() {
        // Metadata keys are alphabetical; order them as relay lists them.
        let mut named: Vec<&IoMeta> = src.main_meta.inputs.iter().collect();
        named.sort_by_key(|io| relay_params.iter().position(|(r, _)| *r == io.name).unwrap_or(usize::MAX));
        for io in named {
            let relay = relay_params.iter().find(|(r, _)| *r == io.name).and_then(|(_, t)| t.clone());
            inputs.push(Candidate {
                raw: io.name.clone(),
                relay,
                order: "metadata.json inputs, in relay order".into(),
            });
        }
    } else if let Some(arity) = src.entry_arity {
        let n_in = arity.checked_sub(n_out).filter(|&n| n > 0).ok_or_else(|| {
            Error::invalid(format!(
                "the entry {} takes {arity} pointers, fewer than {n_out} outputs + 1 input",
                src.entry_fn.name
            ))
        })?;
        if relay_params.len() < n_in {
            return Err(Error::missing(format!(
                "input names and shapes: the entry takes {n_in} inputs but the relay text lists {} parameters",
                relay_params.len()
            )));
        }
        for (raw, relay) in relay_params.iter().take(n_in) {
            let order = "the first parameters of @main (TVM front ends list inputs first)".into();
            inputs.push(Candidate { raw: raw.clone(), relay: relay.clone(), order });
        }
        desc.fact("inputs", format!("first {n_in} parameters of @main"), "entry arity and relay order (heuristic)");
    } else {
        return Err(Error::missing(
            "input names: no interface header, no metadata inputs and no unpacked entry to count",
        ));
    }
    Ok(inputs)
}

/// The interface header's `TVMGEN_<M>_<NAME>_SIZE` for the tensor whose C name is `c_name`.
fn header_bytes(src: &Sources<'_>, c_name: &str) -> Option<(u64, String)> {
    let h = src.header?;
    let m = names::sanitize(&src.module.name).to_ascii_uppercase();
    let key = format!("TVMGEN_{m}_{}_SIZE", c_name.to_ascii_uppercase());
    if c_name.eq_ignore_ascii_case("workspace") {
        return None; // TVMGEN_<M>_WORKSPACE_SIZE is the workspace's
    }
    h.defines.iter().find(|(n, _)| *n == key).map(|(_, v)| (*v, format!("{} {key}", src.header_name)))
}

/// A tensor's entry in metadata, by sanitised name.
fn meta_entry<'m>(ios: &'m [IoMeta], name: &str) -> Option<&'m IoMeta> {
    ios.iter().find(|io| names::sanitize(&io.name) == names::sanitize(name))
}

fn input_evidence(desc: &ModelDesc, src: &Sources<'_>, main: Option<&CFunction>, i: usize, c: &Candidate) -> Evidence {
    let c_name = names::sanitize(&c.raw);
    Evidence {
        what: format!("input {i} ({})", c.raw),
        relay: c.relay.clone().map(|t| (t, format!("@main parameter %{}", c.raw))),
        meta: meta_entry(&src.main_meta.inputs, &c.raw).and_then(|io| Some((DType::parse(&io.dtype).ok()?, io.size))),
        header_bytes: header_bytes(src, &c_name),
        c_dtypes: main.map(|m| c_dtypes(desc, m, i, false)).unwrap_or_default(),
        c_meta_shape: c_metadata_shapes(desc, "inputs").get(i).cloned(),
        ..Default::default()
    }
}

fn output_evidence(
    desc: &ModelDesc,
    src: &Sources<'_>,
    main: Option<&CFunction>,
    (i, name, n_out): (usize, &str, usize),
    n_in: usize,
) -> Evidence {
    let ios = &src.main_meta.outputs;
    // By name, or the only output.
    let io = meta_entry(ios, name).or_else(|| (ios.len() == 1 && n_out == 1).then(|| &ios[0]));
    let relay = src.relay.and_then(|r| Some((r.returns.as_ref()?.get(i)?.clone(), r.returns_source.clone())));
    Evidence {
        what: format!("output {i} ({name})"),
        relay,
        meta: io.and_then(|io| Some((DType::parse(&io.dtype).ok()?, io.size))),
        header_bytes: header_bytes(src, &names::sanitize(name)),
        c_dtypes: main.map(|m| c_dtypes(desc, m, n_in + i, true)).unwrap_or_default(),
        ..Default::default()
    }
}

/// The tensors with their Rust identifiers (an error naming both raw names when two clash); the
/// facts and warnings of their resolution go to `desc`.
fn tensors(desc: &mut ModelDesc, found: Vec<(String, Resolved, Option<String>)>) -> Result<Vec<TensorInfo>> {
    let raw: Vec<&str> = found.iter().map(|(r, ..)| r.as_str()).collect();
    let idents = names::unique_idents(&raw)?;
    let mut out = Vec::new();
    for ((name, r, order), ident) in found.into_iter().zip(idents) {
        for (what, value, source) in r.facts {
            desc.fact(what, value, source);
        }
        desc.warnings.extend(r.warnings);
        let shape_source = match order {
            Some(o) if r.shape_source.starts_with("relay text") => format!("relay text (order from {o})"),
            _ => r.shape_source,
        };
        out.push(TensorInfo {
            name,
            ident,
            dtype: r.ty.dtype,
            shape: r.ty.shape,
            shape_source,
            dtype_source: r.dtype_source,
        });
    }
    Ok(out)
}

/// Shapes from a C metadata module (`kTvmgenMetadata_<inputs|outputs>_<i>_shape`), if present.
fn c_metadata_shapes(desc: &ModelDesc, which: &str) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for i in 0.. {
        let name = format!("kTvmgenMetadata_{which}_{i}_shape");
        let found = desc.code.sources.iter().find_map(|s| s.scan.globals.iter().find(|g| g.name == name));
        match found {
            Some(g) if !g.init_numbers.is_empty() => out.push(g.init_numbers.clone()),
            _ => break,
        }
    }
    out
}
