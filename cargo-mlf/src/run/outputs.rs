//! The outputs of `cargo mlf run`: written as `<output name>.npy` (or `.bin` with `--raw`) into
//! the output folder, and, with `--print-top N`, each output's N largest values printed.

use std::cmp::Ordering;
use std::path::Path;

use mlf_build::__private::npy;
use mlf_build::__private::output::OutputDir;
use mlf_build::{Error, ModelDesc, TensorInfo};

use crate::io_error::InFile;

/// Writes the raw outputs the program left in `out_raw` (`output<i>.bin`) to `dir`, as `.npy` or
/// raw files named by [`file_stems`], never through a link already in the folder
/// (`output.npy → ~/.bashrc`): see `OutputDir`. With `top`, prints each output's `top` largest
/// values on stdout.
pub fn write_outputs(
    desc: &ModelDesc,
    out_raw: &Path,
    dir: Option<&Path>,
    raw: bool,
    top: Option<usize>,
) -> Result<(), Error> {
    let out_dir = dir.map(OutputDir::create).transpose()?;
    for ((i, t), stem) in desc.outputs.iter().enumerate().zip(file_stems(&desc.outputs)) {
        let file = out_raw.join(format!("output{i}.bin"));
        let bytes = std::fs::read(&file).in_file(&file)?;
        let name = format!("{stem}.{}", if raw { "bin" } else { "npy" });
        if let Some(n) = top {
            println!("{}", top_line(t, &bytes, n).map_err(|e| e.in_file(&file))?);
        }
        let Some(out_dir) = &out_dir else { continue };
        let data = if raw { bytes } else { npy::output_npy(t, &bytes).map_err(|e| e.in_file(&name))? };
        let dest = out_dir.write(&name, &data)?;
        eprintln!("output {i} ({}, {} {:?}) → {}", t.name, t.dtype, t.shape, dest.display());
    }
    Ok(())
}

/// The file name (without extension) of each output: its name when that is a plain file name
/// (letters, digits, `_`, `-`, `.`, not starting with `.`) and no other output's file has it;
/// else its Rust field name; else `output<i>`.
pub fn file_stems(outputs: &[TensorInfo]) -> Vec<String> {
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.len() <= 200
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let mut taken = std::collections::HashSet::new();
    let mut stems = Vec::new();
    for (i, t) in outputs.iter().enumerate() {
        let candidates = [t.name.clone(), t.ident.clone(), format!("output{i}")];
        let stem = candidates
            .into_iter()
            .find(|c| plain(c) && !taken.contains(&c.to_lowercase()))
            .unwrap_or_else(|| format!("output{i}-{}", stems.len()));
        taken.insert(stem.to_lowercase());
        stems.push(stem);
    }
    stems
}

/// One element, ordered by value (integers exactly, floats with NaN below everything).
#[derive(Clone, Copy, Debug)]
enum Value {
    Int(i128),
    F32(f32),
    F64(f64),
}

impl Value {
    fn cmp(&self, other: &Value) -> Ordering {
        let key = |v: &Value| match *v {
            Value::F32(f) if !f.is_nan() => Some(f64::from(f)),
            Value::F64(f) if !f.is_nan() => Some(f),
            _ => None,
        };
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            _ => match (key(self), key(other)) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                (a, b) => a.is_some().cmp(&b.is_some()),
            },
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::F32(v) => float(f, f64::from(*v), || v.to_string(), || format!("{v:e}")),
            Value::F64(v) => float(f, *v, || v.to_string(), || format!("{v:e}")),
        }
    }
}

/// A float in its shortest exact form, in scientific notation when very small or large
/// (`9.453203e-9` rather than `0.000000009453203`).
fn float(
    f: &mut std::fmt::Formatter<'_>,
    v: f64,
    plain: impl Fn() -> String,
    sci: impl Fn() -> String,
) -> std::fmt::Result {
    let tiny_or_huge = v != 0.0 && v.is_finite() && (v.abs() < 1e-4 || v.abs() >= 1e7);
    f.write_str(&if tiny_or_huge { sci() } else { plain() })
}

/// The elements of output `t` from its raw little-endian bytes.
fn values(t: &TensorInfo, raw: &[u8]) -> Result<Vec<Value>, Error> {
    let ty = t.dtype.require_rust_type()?;
    let size = t.dtype.elem_bytes() as usize;
    let mut buf = [0u8; 8];
    let value = |c: &[u8], buf: &mut [u8; 8]| {
        let signed = ty.starts_with('i') && c.last().is_some_and(|b| b & 0x80 != 0);
        *buf = [if signed { 0xff } else { 0 }; 8];
        buf[..c.len()].copy_from_slice(c);
        match ty {
            "f32" => Value::F32(f32::from_le_bytes(c.try_into().expect("4 bytes"))),
            "f64" => Value::F64(f64::from_le_bytes(*buf)),
            "u64" => Value::Int(i128::from(u64::from_le_bytes(*buf))),
            _ => Value::Int(i128::from(i64::from_le_bytes(*buf))),
        }
    };
    Ok(raw.chunks_exact(size).map(|c| value(c, &mut buf)).collect())
}

/// `output `NAME`: top N: INDEX (VALUE), …`: the `n` largest elements of output `t` (flat
/// indices in C order; equal values by index), from its raw bytes.
pub fn top_line(t: &TensorInfo, raw: &[u8], n: usize) -> Result<String, Error> {
    let values = values(t, raw)?;
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].cmp(&values[a]).then(a.cmp(&b)));
    let shown: Vec<String> = order.iter().take(n).map(|&i| format!("{i} ({})", values[i])).collect();
    Ok(format!("output `{}`: top {}: {}", t.name, shown.len(), shown.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlf_build::DType;

    fn tensor(name: &str, dtype: &str) -> TensorInfo {
        TensorInfo {
            name: name.into(),
            ident: name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            dtype: DType::parse(dtype).unwrap(),
            shape: vec![4],
            shape_source: "test".into(),
            dtype_source: "test".into(),
        }
    }

    #[test]
    fn top_values_of_every_dtype() {
        let f: Vec<u8> = [0.04f32, 0.91, f32::NAN, 0.01].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            top_line(&tensor("output", "float32"), &f, 3).unwrap(),
            "output `output`: top 3: 1 (0.91), 0 (0.04), 3 (0.01)"
        );
        let d: Vec<u8> = [-1.5f64, 2.5, 0.0, 2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(top_line(&tensor("y", "float64"), &d, 2).unwrap(), "output `y`: top 2: 1 (2.5), 3 (2.5)");
        // Quantized values ordered as signed numbers: -128 is the smallest, not 0x80.
        let q = [0x80u8, 0x7f, 0xff, 0x00];
        assert_eq!(
            top_line(&tensor("q", "int8"), &q, 4).unwrap(),
            "output `q`: top 4: 1 (127), 3 (0), 2 (-1), 0 (-128)"
        );
        assert_eq!(top_line(&tensor("u", "uint8"), &q, 2).unwrap(), "output `u`: top 2: 2 (255), 0 (128)");
        let w: Vec<u8> = [-300i16, 7, 300, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(top_line(&tensor("w", "int16"), &w, 1).unwrap(), "output `w`: top 1: 2 (300)");
        let big: Vec<u8> = [u64::MAX, 1, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(top_line(&tensor("b", "uint64"), &big, 1).unwrap().ends_with(&format!("0 ({})", u64::MAX)));
        let l: Vec<u8> = [i64::MIN, -1, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(top_line(&tensor("l", "int64"), &l, 4).unwrap().ends_with(&format!("0 ({})", i64::MIN)));
        let u: Vec<u8> = [4u32, 1 << 31, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(top_line(&tensor("u32", "uint32"), &u, 1).unwrap().ends_with("1 (2147483648)"));
        let tiny: Vec<u8> = [9.453203e-9f32, 2.5e9, 0.5, 0.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            top_line(&tensor("t", "float32"), &tiny, 4).unwrap(),
            "output `t`: top 4: 1 (2.5e9), 2 (0.5), 0 (9.453203e-9), 3 (0)"
        );
        // More than there are: all of them.
        assert!(top_line(&tensor("q", "int8"), &q, 10).unwrap().contains("top 4:"));
    }

    #[test]
    fn files_are_named_after_the_outputs() {
        let outs = [tensor("output", "float32"), tensor("Identity:0", "float32"), tensor("output", "float32")];
        assert_eq!(file_stems(&outs), ["output", "Identity_0", "output2"]);
        assert_eq!(file_stems(&[tensor("../x", "int8")]), ["___x"]);
    }
}
