//! The dtype and shape of one AOT input or output, from every source the archive has, in a
//! fixed order (the README's "Inferred facts"), each result saying where it came from:
//!
//! - dtype: the relay text (a parameter's type, the returned type) → `metadata.json` → the
//!   typed pointer parameter of the unpacked main (`float* output_buffer_var`) → what the
//!   kernels do with the pointer the main passes them (the element type the last kernel writes
//!   to an output, or the first reads from an input, through `((int8_t*)T_cast)[i]`) → the
//!   `out_dtype` of the relay text's final call (single output);
//! - shape: the relay text → the C metadata module (`kTvmgenMetadata_outputs_<i>_shape`) →
//!   `[1, N]` from the byte size: `metadata.json`, the interface header's
//!   `TVMGEN_<M>_<NAME>_SIZE`, or (a single output) `io_size_bytes` less the inputs.
//!
//! Every byte size recorded is checked against the result (a mismatch is an error: the C would
//! read or write past the buffer); sources that disagree on the dtype give a warning.

use crate::error::{Error, Result};
use crate::model::{CFunction, ModelDesc};
use crate::read::relay::TensorType;
use crate::support::dtype::{DType, tensor_bytes};

/// What the archive records about one tensor.
#[derive(Default)]
pub(super) struct Evidence {
    /// `input 0 (pixels)` / `output 1 (output1)`, for messages.
    pub(super) what: String,
    /// Its type in the relay text, and where.
    pub(super) relay: Option<(TensorType, String)>,
    /// Its dtype and byte size in `metadata.json`.
    pub(super) meta: Option<(DType, u64)>,
    /// Its byte size in the interface header, and the macro's name.
    pub(super) header_bytes: Option<(u64, String)>,
    /// Its dtype as the C uses it, with where (the main's parameter first, then the kernels).
    pub(super) c_dtypes: Vec<(DType, String)>,
    /// Its shape in the C metadata module.
    pub(super) c_meta_shape: Option<Vec<u64>>,
    /// The `out_dtype` of the relay text's final call (a single output).
    pub(super) call_dtype: Option<DType>,
    /// `io_size_bytes` less the inputs (a single output), and where that came from.
    pub(super) rest_bytes: Option<u64>,
}

/// A resolved tensor: its type, where its dtype and its shape came from, and the inferred facts
/// to record.
#[derive(Debug)]
pub(super) struct Resolved {
    pub(super) ty: TensorType,
    pub(super) dtype_source: String,
    pub(super) shape_source: String,
    pub(super) facts: Vec<(String, String, String)>,
    pub(super) warnings: Vec<String>,
}

impl Evidence {
    /// The dtype and shape, each from the first source that records it.
    pub(super) fn resolve(self) -> Result<Resolved> {
        let mut facts = Vec::new();
        let dtypes = self.dtype_candidates();
        let Some((dtype, dtype_source)) = dtypes.first().cloned() else {
            return Err(Error::missing(format!(
                "dtype of {}: not in the relay text, metadata.json or the C (main's parameters, the kernels' accesses)",
                self.what
            )));
        };
        let warnings = dtypes
            .iter()
            .filter(|(d, _)| *d != dtype)
            .map(|(d, s)| format!("{}: {dtype_source} says {dtype}, but {s} says {d}; using {dtype}", self.what))
            .collect();
        if self.relay.is_none() && self.meta.is_none() {
            facts.push((format!("{} dtype", self.what), dtype.to_string(), dtype_source.clone()));
        }
        let (shape, shape_source) = if let Some((t, s)) = &self.relay {
            (t.shape.clone(), format!("relay text ({s})"))
        } else if let Some(shape) = &self.c_meta_shape {
            facts.push((format!("{} shape", self.what), format!("{shape:?}"), "C metadata module".into()));
            (shape.clone(), "C metadata module".to_string())
        } else {
            let (bytes, from) = self.bytes().ok_or_else(|| {
                Error::missing(format!(
                    "shape of {}: not in the relay text or a C metadata module, and no byte size to derive it from",
                    self.what
                ))
            })?;
            let elem = dtype.elem_bytes().max(1);
            if bytes % elem != 0 {
                return Err(Error::mismatch(format!(
                    "{}: {from} gives {bytes} bytes, not a whole number of {dtype} elements",
                    self.what
                )));
            }
            let n = bytes / elem;
            facts.push((
                format!("{} shape", self.what),
                format!("[1, {n}]"),
                format!("{bytes} bytes in {from} (the shape is not recorded; override if needed)"),
            ));
            (vec![1, n], format!("assumed [1, {n}] from its byte size"))
        };
        let ty = TensorType { shape, dtype };
        self.check_sizes(&ty)?;
        Ok(Resolved { ty, dtype_source, shape_source, facts, warnings })
    }

    /// Every dtype recorded, in order of preference.
    fn dtype_candidates(&self) -> Vec<(DType, String)> {
        let mut out = Vec::new();
        if let Some((t, s)) = &self.relay {
            out.push((t.dtype, format!("relay text ({s})")));
        }
        if let Some((d, _)) = self.meta {
            out.push((d, "metadata.json".to_string()));
        }
        out.extend(self.c_dtypes.iter().cloned());
        if let Some(d) = self.call_dtype {
            out.push((d, "relay text (out_dtype of the final call)".to_string()));
        }
        out
    }

    /// The byte size, from the first source that records it.
    fn bytes(&self) -> Option<(u64, String)> {
        if let Some((_, b)) = self.meta {
            return Some((b, "metadata.json".into()));
        }
        if let Some((b, name)) = &self.header_bytes {
            return Some((*b, name.clone()));
        }
        self.rest_bytes.map(|b| (b, "io_size_bytes of metadata.json less the inputs".into()))
    }

    /// The tensor's size agrees with every byte size the archive records for it.
    fn check_sizes(&self, ty: &TensorType) -> Result<()> {
        let bytes = tensor_bytes(ty.dtype, &ty.shape)?;
        let recorded =
            self.meta.map(|(_, b)| (b, "metadata.json".to_string())).into_iter().chain(self.header_bytes.clone());
        for (b, from) in recorded {
            if b != bytes {
                return Err(Error::mismatch(format!(
                    "{}: {:?} {} is {bytes} bytes, but {from} says {b}",
                    self.what, ty.shape, ty.dtype
                )));
            }
        }
        Ok(())
    }
}

/// The dtypes the C gives the tensor at position `pos` of the unpacked `main`: its declared
/// pointer type, then the element type the kernels it is passed to write (`output`: the last
/// such call) or read (the first).
pub(super) fn c_dtypes(desc: &ModelDesc, main: &CFunction, pos: usize, output: bool) -> Vec<(DType, String)> {
    let mut out = Vec::new();
    let Some(uses) = main.param_uses.get(pos) else { return out };
    if let Some(d) = uses.declared.as_deref().and_then(c_elem_dtype) {
        let p = &main.params[pos];
        out.push((d, format!("the C (parameter `{} {}` of {})", p.ty, p.name, main.name)));
    }
    let passes = |call: &&crate::model::CCall| {
        call.args.iter().position(|a| passed_name(a).is_some_and(|n| uses.names.iter().any(|u| u == n)))
    };
    let mut calls = main.calls.iter().filter(|c| passes(c).is_some());
    let call = if output { calls.next_back() } else { calls.next() };
    if let Some(call) = call {
        let k = passes(&call).unwrap_or(0);
        let kernel_use = desc.code.definition(&call.callee).and_then(|(_, f)| f.param_uses.get(k));
        let elem = kernel_use.and_then(|u| if output { u.written() } else { u.read() });
        if let Some(d) = elem.and_then(c_elem_dtype) {
            let verb = if output { "writes" } else { "reads" };
            out.push((d, format!("the C ({} {verb} it as {})", call.callee, elem.unwrap_or_default())));
        }
    }
    out
}

/// The variable an argument passes, through casts: `output`, `(int8_t*)output` → `output`.
fn passed_name(arg: &str) -> Option<&str> {
    let mut rest = arg.trim();
    while let Some(inner) = rest.strip_prefix('(') {
        let close = inner.find(')')?;
        rest = inner[close + 1..].trim();
    }
    (!rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(rest)
}

/// The dtype of a C element type as TVM prints it.
fn c_elem_dtype(c: &str) -> Option<DType> {
    let name = match c {
        "float" => "float32",
        "double" => "float64",
        "half" => "float16",
        "int8_t" | "signed char" => "int8",
        "uint8_t" | "unsigned char" => "uint8",
        "int16_t" | "short" => "int16",
        "uint16_t" | "unsigned short" => "uint16",
        "int32_t" | "int" => "int32",
        "uint32_t" | "unsigned int" => "uint32",
        "int64_t" | "long long" => "int64",
        "uint64_t" | "unsigned long long" => "uint64",
        "bool" => "bool",
        _ => return None,
    };
    DType::parse(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_through_casts() {
        assert_eq!(passed_name("output"), Some("output"));
        assert_eq!(passed_name("(int8_t*)output"), Some("output"));
        assert_eq!(passed_name("((void*)output)"), None);
        assert_eq!(passed_name("&global_workspace"), None);
        assert_eq!(passed_name("inputs->x"), None);
    }

    fn ev(dtype: DType) -> Evidence {
        Evidence { what: "output 0 (y)".into(), c_dtypes: vec![(dtype, "the C".into())], ..Default::default() }
    }

    #[test]
    fn shape_from_the_byte_size_and_checks() {
        let r = Evidence { header_bytes: Some((12, "H_SIZE".into())), ..ev(DType::F32) }.resolve().unwrap();
        assert_eq!(r.ty.shape, vec![1, 3]);
        assert_eq!(r.shape_source, "assumed [1, 3] from its byte size");
        assert!(r.facts.iter().any(|f| f.2.contains("H_SIZE")), "{:?}", r.facts);
        let e = Evidence { header_bytes: Some((10, "H_SIZE".into())), ..ev(DType::F32) }.resolve();
        assert!(e.unwrap_err().to_string().contains("not a whole number"));
        let relay = Some((TensorType { shape: vec![1, 1, 1, 3], dtype: DType::U8 }, "r".into()));
        let e = Evidence { relay, header_bytes: Some((4, "H_SIZE".into())), ..ev(DType::U8) }.resolve();
        assert!(e.unwrap_err().to_string().contains("H_SIZE says 4"));
        let e = Evidence { what: "output 0 (y)".into(), ..Default::default() }.resolve();
        assert!(e.unwrap_err().to_string().contains("dtype of output 0 (y)"));
    }
}
