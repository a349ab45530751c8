//! The inputs and outputs of an AOT module: order from the interface header (or the entry's
//! arity and relay order), types from the relay text, metadata or the C.

use super::output_names;
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::read::header::InterfaceHeader;
use crate::read::metadata::{IoMeta, MainMemory, ModuleMeta};
use crate::read::relay::{RelayMain, TensorType};
use crate::support::dtype::DType;
use crate::support::names;

/// Works out AOT inputs and outputs: order from the interface header (or the entry's arity and
/// relay order), types from relay text, metadata or the C.
pub(super) fn resolve_aot_io(
    desc: &mut ModelDesc,
    module: &ModuleMeta,
    header: Option<&InterfaceHeader>,
    relay: Option<&RelayMain>,
    main_meta: &MainMemory,
    entry_arity: Option<usize>,
    entry_fn: &CFunction,
) -> Result<()> {
    let relay_params: Vec<(String, Option<TensorType>)> = relay.map(|r| r.params.clone()).unwrap_or_default();
    let find_relay = |c_name: &str| relay_params.iter().find(|(raw, _)| names::sanitize(raw) == c_name);

    // Number of outputs.
    let n_out = header
        .map(|h| h.outputs.len())
        .filter(|&n| n > 0)
        .or_else(|| relay.and_then(|r| r.returns.as_ref()).map(Vec::len))
        .or_else(|| (!main_meta.outputs.is_empty()).then_some(main_meta.outputs.len()))
        .unwrap_or(1);

    // Inputs: (raw name, type, source).
    let mut inputs: Vec<(String, Option<TensorType>, String)> = Vec::new();
    if let Some(h) = header {
        for c in &h.inputs {
            match find_relay(c) {
                Some((raw, ty)) => {
                    inputs.push((raw.clone(), ty.clone(), "relay text (order from interface header)".into()))
                }
                None => inputs.push((c.clone(), None, "interface header".into())),
            }
        }
    } else if !main_meta.inputs.is_empty() {
        // Metadata keys are alphabetical; order them as relay lists them.
        let mut named: Vec<&IoMeta> = main_meta.inputs.iter().collect();
        named.sort_by_key(|io| relay_params.iter().position(|(r, _)| *r == io.name).unwrap_or(usize::MAX));
        for io in named {
            let ty = relay_params.iter().find(|(r, _)| *r == io.name).and_then(|(_, t)| t.clone());
            inputs.push((io.name.clone(), ty, "metadata.json inputs (order from relay text)".into()));
        }
    } else if let Some(arity) = entry_arity {
        let n_in = arity.checked_sub(n_out).filter(|&n| n > 0).ok_or_else(|| {
            Error::invalid(format!(
                "the entry {} takes {arity} pointers, fewer than {n_out} outputs + 1 input",
                entry_fn.name
            ))
        })?;
        if relay_params.len() < n_in {
            return Err(Error::missing(format!(
                "input names and shapes: the entry takes {n_in} inputs but the relay text lists {} parameters",
                relay_params.len()
            )));
        }
        for (raw, ty) in relay_params.iter().take(n_in) {
            inputs.push((
                raw.clone(),
                ty.clone(),
                "relay text (first parameters of @main; TVM front ends list inputs first)".into(),
            ));
        }
        desc.fact("inputs", format!("first {n_in} parameters of @main"), "entry arity and relay order (heuristic)");
    } else {
        return Err(Error::missing(
            "input names: no interface header, no metadata inputs and no unpacked entry to count",
        ));
    }

    let mut resolved_inputs = Vec::new();
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
        resolved_inputs.push((raw, ty, source));
    }

    // Outputs.
    let mut out_names: Vec<String> = match header {
        Some(h) if !h.outputs.is_empty() => h.outputs.clone(),
        _ => output_names(n_out, relay, module),
    };
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n_out {
            out_names = names.clone();
        }
    }
    let returns = relay.and_then(|r| r.returns.clone());
    let c_meta_shapes = c_metadata_output_shapes(desc);
    let mut resolved_outputs = Vec::new();
    for (i, name) in out_names.iter().enumerate() {
        if let Some(t) = returns.as_ref().and_then(|r| r.get(i)) {
            resolved_outputs.push((name.clone(), t.clone(), "relay text return type".to_string()));
            continue;
        }
        // dtype and element count from metadata (by name, or the only output).
        let io = main_meta
            .outputs
            .iter()
            .find(|io| names::sanitize(&io.name) == names::sanitize(name))
            .or_else(|| (main_meta.outputs.len() == 1 && n_out == 1).then(|| &main_meta.outputs[0]));
        let dtype = match io {
            Some(io) => Some(DType::parse(&io.dtype)?),
            None => output_dtype_from_c(desc, entry_fn, resolved_inputs.len() + i).or_else(|| {
                let d = relay.and_then(|r| r.final_dtype).filter(|_| n_out == 1)?;
                desc.fact(
                    format!("output {name} dtype"),
                    d.to_string(),
                    "out_dtype of the relay text's final expression",
                );
                Some(d)
            }),
        };
        let Some(dtype) = dtype else {
            return Err(Error::missing(format!("dtype of output {i} ({name}): not in relay text, metadata or the C")));
        };
        if let Some(shape) = c_meta_shapes.get(i) {
            resolved_outputs.push((
                name.clone(),
                TensorType { shape: shape.clone(), dtype },
                "C metadata module".into(),
            ));
            continue;
        }
        let bytes = match io {
            Some(io) => io.size,
            None if n_out == 1 => {
                let in_bytes: u64 = resolved_inputs
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
        resolved_outputs.push((
            name.clone(),
            TensorType { shape: vec![1, n], dtype },
            format!("assumed [1, {n}] from its byte size"),
        ));
        desc.fact(
            format!("output {name} shape"),
            format!("[1, {n}]"),
            "byte size in metadata (shape not recorded; override if needed)",
        );
    }

    let raw_in: Vec<&str> = resolved_inputs.iter().map(|(r, ..)| r.as_str()).collect();
    let ids_in = names::unique_idents(&raw_in).at("inputs")?;
    desc.inputs = resolved_inputs
        .into_iter()
        .zip(ids_in)
        .map(|((name, t, source), ident)| TensorInfo {
            name,
            ident,
            dtype: t.dtype,
            shape: t.shape,
            shape_source: source,
        })
        .collect();
    let raw_out: Vec<&str> = resolved_outputs.iter().map(|(r, ..)| r.as_str()).collect();
    let ids_out = names::unique_idents(&raw_out).at("outputs")?;
    desc.outputs = resolved_outputs
        .into_iter()
        .zip(ids_out)
        .map(|((name, t, source), ident)| TensorInfo {
            name,
            ident,
            dtype: t.dtype,
            shape: t.shape,
            shape_source: source,
        })
        .collect();
    Ok(())
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
