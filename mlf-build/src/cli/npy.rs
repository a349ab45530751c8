//! Tensor files for `cargo mlf run`: `.npy` (read and written with `npyz`) or raw
//! little-endian bytes.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::TensorInfo;
use crate::support::dtype::{DTypeCode, numel};

/// Largest input file `cargo mlf run` reads: the largest tensor it can pass, plus a header.
pub const MAX_INPUT_FILE_BYTES: u64 = 1 << 30;

/// Reads an input file (a regular file of at most [`MAX_INPUT_FILE_BYTES`]) as raw
/// little-endian bytes of `t`'s dtype and size.
pub fn read_input(path: &Path, t: &TensorInfo) -> Result<Vec<u8>> {
    let data = crate::support::files::read_regular(path, MAX_INPUT_FILE_BYTES, "input file")?;
    input_bytes(data, t).map_err(|e| e.in_file(path))
}

/// The raw little-endian bytes of input `t` from the contents of an input file: a `.npy` file
/// (dtype and element count checked, C order only) or raw bytes of exactly `t`'s size.
pub fn input_bytes(data: Vec<u8>, t: &TensorInfo) -> Result<Vec<u8>> {
    let bytes = if data.starts_with(b"\x93NUMPY") { from_npy(&data, t)? } else { data };
    let needed = t.bytes_checked()?;
    if bytes.len() as u64 != needed {
        return Err(Error::mismatch(format!(
            "{} bytes, but input {} is {} {:?} ({needed} bytes)",
            bytes.len(),
            t.name,
            t.dtype,
            t.shape,
        )));
    }
    Ok(bytes)
}

fn from_npy(data: &[u8], t: &TensorInfo) -> Result<Vec<u8>> {
    // npyz multiplies the shape unchecked: check it before handing the file over.
    let shape = header_shape(data)?;
    if numel(&shape).is_none() {
        return Err(Error::invalid(format!(
            "the .npy header's shape {shape:?} has more elements than a 64-bit count holds"
        ))
        .at("shape"));
    }
    let npy = npyz::NpyFile::new(data).map_err(|e| Error::invalid(format!("not a valid .npy file: {e}")))?;
    if npy.order() == npyz::Order::Fortran {
        return Err(Error::unsupported(
            "Fortran-order .npy files (fortran_order: True) are not read: their elements would be taken \
             in the wrong order; save the array in C order (numpy.ascontiguousarray)",
        ));
    }
    let Some(n) = numel(npy.shape()) else {
        return Err(Error::invalid(format!(
            "the .npy header's shape {:?} has more elements than a 64-bit count holds",
            npy.shape()
        ))
        .at("shape"));
    };
    if n != t.numel_checked()? {
        return Err(Error::mismatch(format!(
            "shape {:?} has {n} elements, input {} needs {:?}",
            npy.shape(),
            t.name,
            t.shape
        )));
    }
    // The element count agrees with the model's input, whose size the build checked: what is
    // read below is at most that many elements, and the file's data must hold them.
    let bad = |e: std::io::Error| {
        Error::mismatch(format!("the .npy dtype does not match input {} ({}): {e}", t.name, t.dtype))
    };
    macro_rules! convert {
        ($ty:ty) => {
            npy.into_vec::<$ty>().map_err(bad)?.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
    }
    Ok(match (t.dtype.code, t.dtype.bits, t.dtype.lanes) {
        (DTypeCode::Float, 32, 1) => convert!(f32),
        (DTypeCode::Float, 64, 1) => convert!(f64),
        (DTypeCode::Int, 8, 1) => convert!(i8),
        (DTypeCode::Int, 16, 1) => convert!(i16),
        (DTypeCode::Int, 32, 1) => convert!(i32),
        (DTypeCode::Int, 64, 1) => convert!(i64),
        (DTypeCode::UInt, 8, 1) => convert!(u8),
        (DTypeCode::UInt, 16, 1) => convert!(u16),
        (DTypeCode::UInt, 32, 1) => convert!(u32),
        (DTypeCode::UInt, 64, 1) => convert!(u64),
        _ => return Err(Error::unsupported(format!("dtype {} in .npy files", t.dtype))),
    })
}

/// The `shape` of a `.npy` header (format versions 1 to 3: magic, version, header length,
/// a Python dict literal), read without trusting it.
fn header_shape(data: &[u8]) -> Result<Vec<u64>> {
    let bad = |why: &str| Error::invalid(format!("not a valid .npy file: {why}"));
    let (len, start): (Option<usize>, usize) = match data.get(6..8) {
        Some([1, _]) => (data.get(8..10).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize), 10),
        Some([2 | 3, _]) => (data.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize), 12),
        _ => return Err(bad("unknown format version")),
    };
    let len = len.ok_or_else(|| bad("truncated header"))?;
    let header = start.checked_add(len).and_then(|end| data.get(start..end)).ok_or_else(|| bad("truncated header"))?;
    let text = std::str::from_utf8(header).map_err(|_| bad("the header is not text"))?;
    let mut found = text.match_indices("'shape'").chain(text.match_indices("\"shape\""));
    let (Some((at, key)), None) = (found.next(), found.next()) else {
        return Err(bad("the header must name one shape"));
    };
    let rest = text[at + key.len()..].trim_start().strip_prefix(':').ok_or_else(|| bad("shape"))?.trim_start();
    let inner = rest.strip_prefix('(').and_then(|r| r.split_once(')')).ok_or_else(|| bad("shape is not a tuple"))?.0;
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse::<u64>().map_err(|_| bad(&format!("shape dimension {d:?}"))))
        .collect()
}

/// The `.npy` file of an output: raw little-endian bytes with the output's dtype and shape.
pub fn output_npy(t: &TensorInfo, raw: &[u8]) -> Result<Vec<u8>> {
    use npyz::WriterBuilder;
    let mut out = Vec::new();
    macro_rules! write {
        ($ty:ty) => {{
            let mut w = npyz::WriteOptions::new().default_dtype().shape(&t.shape).writer(&mut out).begin_nd()?;
            let size = std::mem::size_of::<$ty>();
            for c in raw.chunks_exact(size) {
                w.push(&<$ty>::from_le_bytes(c.try_into().expect("chunk of the type's size")))?;
            }
            w.finish()?;
        }};
    }
    match (t.dtype.code, t.dtype.bits, t.dtype.lanes) {
        (DTypeCode::Float, 32, 1) => write!(f32),
        (DTypeCode::Float, 64, 1) => write!(f64),
        (DTypeCode::Int, 8, 1) => write!(i8),
        (DTypeCode::Int, 16, 1) => write!(i16),
        (DTypeCode::Int, 32, 1) => write!(i32),
        (DTypeCode::Int, 64, 1) => write!(i64),
        (DTypeCode::UInt, 8, 1) => write!(u8),
        (DTypeCode::UInt, 16, 1) => write!(u16),
        (DTypeCode::UInt, 32, 1) => write!(u32),
        (DTypeCode::UInt, 64, 1) => write!(u64),
        _ => return Err(Error::unsupported(format!("dtype {} in .npy files", t.dtype))),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::dtype::DType;

    fn input(shape: &[u64]) -> TensorInfo {
        TensorInfo {
            name: "x".into(),
            ident: "x".into(),
            dtype: DType::F32,
            shape: shape.to_vec(),
            shape_source: "test".into(),
            dtype_source: "test".into(),
        }
    }

    /// A `.npy` header (version 1) with the given shape text and no data.
    fn npy_with_shape(shape: &str) -> Vec<u8> {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out
    }

    #[test]
    fn a_shape_whose_product_overflows_is_refused() {
        // 2^32 × 2^32 wraps to 0 in 64 bits; 2^32 × 2^32 × 4 wraps to 0 too.
        let data = npy_with_shape("(4294967296, 4294967296)");
        let e = input_bytes(data, &input(&[0])).unwrap_err();
        assert!(e.to_string().contains("more elements than a 64-bit count holds"), "{e}");
        let data = npy_with_shape("(4294967296, 4294967296, 4)");
        assert!(input_bytes(data, &input(&[4])).is_err());
    }

    #[test]
    fn reads_and_writes_npy() {
        let t = input(&[1, 2]);
        let raw: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = output_npy(&t, &raw).unwrap();
        assert_eq!(input_bytes(file, &t).unwrap(), raw);
        let e = input_bytes(vec![0; 7], &t).unwrap_err();
        assert!(e.to_string().contains("7 bytes, but input x is float32 [1, 2] (8 bytes)"), "{e}");
    }
}
