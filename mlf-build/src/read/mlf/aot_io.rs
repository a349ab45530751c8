//! The inputs and outputs of an AOT module: order from the interface header (or the entry's
//! arity and relay order), types from the relay text, metadata or the C.

use super::outputs::output_names;
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::read::header::InterfaceHeader;
use crate::read::metadata::{IoMeta, MainMemory, ModuleMeta};
use crate::read::relay::{RelayMain, TensorType};
use crate::support::dtype::DType;
use crate::support::names;

/// A tensor as found: raw name, type, and where the type came from.
type Found = (String, TensorType, String);

/// What the inputs and outputs are worked out from.
pub(super) struct Sources<'a> {
    pub(super) module: &'a ModuleMeta,
    pub(super) header: Option<&'a InterfaceHeader>,
    pub(super) relay: Option<&'a RelayMain>,
    pub(super) main_meta: &'a MainMemory,
    /// The number of tensors the unpacked entry takes, when there is one.
    pub(super) entry_arity: Option<usize>,
    /// The C function the entry (or the main it forwards to) is.
    pub(super) entry_fn: &'a CFunction,
}

/// Works out AOT inputs and outputs: order from the interface header (or the entry's arity and
/// relay order), types from relay text, metadata or the C.
pub(super) fn resolve_aot_io(desc: &mut ModelDesc, src: &Sources<'_>) -> Result<()> {
    let (header, relay, main_meta) = (src.header, src.relay, src.main_meta);
    let n_out = header
        .map(|h| h.outputs.len())
        .filter(|&n| n > 0)
        .or_else(|| relay.and_then(|r| r.returns.as_ref()).map(Vec::len))
        .or_else(|| (!main_meta.outputs.is_empty()).then_some(main_meta.outputs.len()))
        .unwrap_or(1);
    let inputs = typed_inputs(input_candidates(desc, src, n_out)?, main_meta)?;
    let mut out_names: Vec<String> = match header {
        Some(h) if !h.outputs.is_empty() => h.outputs.clone(),
        _ => output_names(n_out, relay, src.module),
    };
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n_out {
            out_names = names.clone();
        }
    }
    let c_meta_shapes = c_metadata_output_shapes(desc);
    let mut outputs = Vec::new();
    for (i, name) in out_names.iter().enumerate() {
        outputs.push(resolve_output(desc, src, &inputs, &c_meta_shapes, (i, name, n_out))?);
    }
    desc.inputs = tensors(inputs).at("inputs")?;
    desc.outputs = tensors(outputs).at("outputs")?;
    Ok(())
}

/// The inputs in order, with their types where relay text or metadata records them: from the
/// interface header, else metadata, else the entry's arity and relay order.
fn input_candidates(
    desc: &mut ModelDesc,
    src: &Sources<'_>,
    n_out: usize,
) -> Result<Vec<(String, Option<TensorType>, String)>> {
    let relay_params: Vec<(String, Option<TensorType>)> = src.relay.map(|r| r.params.clone()).unwrap_or_default();
    let mut inputs = Vec::new();
    if let Some(h) = src.header {
        for c in &h.inputs {
            match relay_params.iter().find(|(raw, _)| names::sanitize(raw) == *c) {
                Some((raw, ty)) => {
                    inputs.push((raw.clone(), ty.clone(), "relay text (order from interface header)".into()))
                }
                None => inputs.push((c.clone(), None, "interface header".into())),
            }
        }
    } else if !src.main_meta.inputs.is_empty() {
        // Metadata keys are alphabetical; order them as relay lists them.
        let mut named: Vec<&IoMeta> = src.main_meta.inputs.iter().collect();
        named.sort_by_key(|io| relay_params.iter().position(|(r, _)| *r == io.name).unwrap_or(usize::MAX));
        for io in named {
            let ty = relay_params.iter().find(|(r, _)| *r == io.name).and_then(|(_, t)| t.clone());
            inputs.push((io.name.clone(), ty, "metadata.json inputs (order from relay text)".into()));
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
        for (raw, ty) in relay_params.iter().take(n_in) {
            let source = "relay text (first parameters of @main; TVM front ends list inputs first)";
            inputs.push((raw.clone(), ty.clone(), source.into()));
        }
        desc.fact("inputs", format!("first {n_in} parameters of @main"), "entry arity and relay order (heuristic)");
    } else {
        return Err(Error::missing(
            "input names: no interface header, no metadata inputs and no unpacked entry to count",
        ));
    }
    Ok(inputs)
}

/// The inputs' types: as found, else from metadata (`[1, n]` from the byte size).
fn typed_inputs(inputs: Vec<(String, Option<TensorType>, String)>, main_meta: &MainMemory) -> Result<Vec<Found>> {
    let mut out = Vec::new();
    for (raw, ty, source) in inputs {
        let c = names::sanitize(&raw);
        let ty = match ty {
            Some(t) => t,
            None => {
                let io = main_meta.inputs.iter().find(|io| names::sanitize(&io.name) == c).ok_or_else(|| {
                    Error::missing(format!("shape of input {raw}: neither relay text nor metadata records it"))
                })?;
                let dtype = DType::parse(&io.dtype)?;
                TensorType { shape: vec![1, io.size / dtype.elem_bytes().max(1)], dtype }
            }
        };
        out.push((raw, ty, source));
    }
    Ok(out)
}

/// Output `i` (named `name`, of `n_out`): its type from relay text, else its dtype from
/// metadata, the C or relay's final expression and its shape from the C metadata module or its
/// byte size.
fn resolve_output(
    desc: &mut ModelDesc,
    src: &Sources<'_>,
    inputs: &[Found],
    c_meta_shapes: &[Vec<u64>],
    (i, name, n_out): (usize, &str, usize),
) -> Result<Found> {
    let (relay, main_meta) = (src.relay, src.main_meta);
    if let Some(t) = relay.and_then(|r| r.returns.as_ref()).and_then(|r| r.get(i)) {
        return Ok((name.to_string(), t.clone(), "relay text return type".to_string()));
    }
    // dtype and element count from metadata (by name, or the only output).
    let io = main_meta
        .outputs
        .iter()
        .find(|io| names::sanitize(&io.name) == names::sanitize(name))
        .or_else(|| (main_meta.outputs.len() == 1 && n_out == 1).then(|| &main_meta.outputs[0]));
    let dtype = match io {
        Some(io) => Some(DType::parse(&io.dtype)?),
        None => output_dtype_from_c(desc, src.entry_fn, inputs.len() + i).or_else(|| {
            let d = relay.and_then(|r| r.final_dtype).filter(|_| n_out == 1)?;
            desc.fact(format!("output {name} dtype"), d.to_string(), "out_dtype of the relay text's final expression");
            Some(d)
        }),
    };
    let Some(dtype) = dtype else {
        return Err(Error::missing(format!("dtype of output {i} ({name}): not in relay text, metadata or the C")));
    };
    if let Some(shape) = c_meta_shapes.get(i) {
        return Ok((name.to_string(), TensorType { shape: shape.clone(), dtype }, "C metadata module".into()));
    }
    let bytes = match io {
        Some(io) => io.size,
        None if n_out == 1 => {
            let in_bytes: u64 = inputs
                .iter()
                .map(|(_, t, _)| crate::support::dtype::tensor_bytes(t.dtype, &t.shape).unwrap_or(0))
                .sum();
            main_meta.io_size_bytes.checked_sub(in_bytes).filter(|&b| b > 0).ok_or_else(|| {
                Error::missing(format!(
                    "shape of output {name}: not recorded anywhere (io_size_bytes does not leave room for it)"
                ))
            })?
        }
        None => return Err(Error::missing(format!("shape of output {i} ({name}): not recorded anywhere"))),
    };
    let n = bytes / dtype.elem_bytes().max(1);
    desc.fact(
        format!("output {name} shape"),
        format!("[1, {n}]"),
        "byte size in metadata (shape not recorded; override if needed)",
    );
    Ok((name.to_string(), TensorType { shape: vec![1, n], dtype }, format!("assumed [1, {n}] from its byte size")))
}

/// The tensors with their Rust identifiers (an error naming both raw names when two clash).
fn tensors(found: Vec<Found>) -> Result<Vec<TensorInfo>> {
    let raw: Vec<&str> = found.iter().map(|(r, ..)| r.as_str()).collect();
    let idents = names::unique_idents(&raw)?;
    Ok(found
        .into_iter()
        .zip(idents)
        .map(|((name, t, source), ident)| TensorInfo {
            name,
            ident,
            dtype: t.dtype,
            shape: t.shape,
            shape_source: source,
        })
        .collect())
}

/// Output shapes from a C metadata module (`kTvmgenMetadata_outputs_<i>_shape`), if present.
fn c_metadata_output_shapes(desc: &ModelDesc) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for i in 0.. {
        let name = format!("kTvmgenMetadata_outputs_{i}_shape");
        let found = desc.code.sources.iter().find_map(|s| s.scan.globals.iter().find(|g| g.name == name));
        match found {
            Some(g) if !g.init_numbers.is_empty() => out.push(g.init_numbers.clone()),
            _ => break,
        }
    }
    out
}

/// The dtype of the entry's `arg`-th pointer, read from the typed parameter of the kernel that
/// receives it (for archives that record output types nowhere else).
fn output_dtype_from_c(desc: &ModelDesc, entry: &CFunction, arg: usize) -> Option<DType> {
    let pname = &entry.params.get(arg)?.name;
    for call in &entry.calls {
        if let Some(k) = call.args.iter().position(|a| a == pname) {
            if let Some((_, kernel)) = desc.code.definition(&call.callee) {
                let ty = kernel.params.get(k)?.ty.replace(' ', "");
                return match ty.as_str() {
                    "float*" => Some(DType::F32),
                    "double*" => Some(DType::parse("float64").ok()?),
                    "int8_t*" => Some(DType::I8),
                    "uint8_t*" => Some(DType::U8),
                    "int16_t*" => DType::parse("int16").ok(),
                    "int32_t*" => Some(DType::I32),
                    _ => None,
                };
            }
        }
    }
    None
}
