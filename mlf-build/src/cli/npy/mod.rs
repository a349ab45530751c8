//! Tensor files for `cargo mlf run`: `.npy` (headers read by [`header`], strictly and in one
//! pass; outputs written with `npyz`) or raw little-endian bytes.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::TensorInfo;
use crate::support::dtype::{DTypeCode, numel};

pub mod header;

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
    if data.starts_with(b"PK\x03\x04") || data.starts_with(b"PK\x05\x06") {
        return Err(Error::unsupported(
            "a NumPy .npz archive (several arrays in a zip, as tvmc writes inputs) is not read as an input",
        )
        .with_help(format!(
            "save each array as its own .npy and give each with --input NAME=FILE.npy: python3 -c \"import numpy; \
             [numpy.save(k + '.npy', v) for k, v in numpy.load('inputs.npz').items()]\" (input {} is one of them)",
            t.name
        )));
    }
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
    let h = header::read(data)?;
    if h.fortran_order {
        return Err(Error::unsupported(
            "Fortran-order .npy files (fortran_order: True) are not read: their elements would be taken \
             in the wrong order; save the array in C order (numpy.ascontiguousarray)",
        ));
    }
    let Some(n) = numel(&h.shape) else {
        return Err(Error::invalid(format!(
            "the .npy header's shape {:?} has more elements than a 64-bit count holds",
            h.shape
        ))
        .at("shape"));
    };
    if h.dtype != t.dtype {
        let np = header::numpy_name(t.dtype);
        let quantized = if matches!(t.dtype.code, DTypeCode::Int | DTypeCode::UInt) && h.dtype.code == DTypeCode::Float
        {
            format!(
                "; a quantized {} input takes quantized values: divide by the input's scale, add its zero point, round and save with .astype(numpy.{np})",
                t.dtype
            )
        } else {
            format!("; save it with .astype(numpy.{np})")
        };
        return Err(Error::mismatch(format!(
            "input {} is {} but the .npy file holds {} ('{}'){quantized}",
            t.name,
            t.dtype,
            header::numpy_name(h.dtype),
            h.descr
        )));
    }
    if n != t.numel_checked()? {
        return Err(Error::mismatch(format!(
            "shape {:?} has {n} elements, input {} needs {:?}",
            h.shape, t.name, t.shape
        )));
    }
    // The element count agrees with the model's input, whose size the build checked.
    let size = t.dtype.elem_bytes() as usize;
    let needed = t.bytes_checked()? as usize;
    let body = &data[h.data_start..];
    if body.len() != needed {
        return Err(Error::mismatch(format!(
            "the .npy file holds {} bytes of data after its header, its shape {:?} of {} needs {needed}",
            body.len(),
            h.shape,
            h.descr
        )));
    }
    let mut out = body.to_vec();
    if h.big_endian {
        out.chunks_exact_mut(size).for_each(<[u8]>::reverse);
    }
    Ok(out)
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
        (DTypeCode::Bool, 8, 1) => {
            let mut w = npyz::WriteOptions::new().default_dtype().shape(&t.shape).writer(&mut out).begin_nd()?;
            for &b in raw {
                w.push(&(b != 0))?;
            }
            w.finish()?;
        }
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

    /// A `.npz` (a zip, as tvmc writes inputs) is refused by name with how to convert it, not
    /// read as raw bytes.
    #[test]
    fn an_npz_archive_is_refused_by_name() {
        let mut zip = b"PK\x03\x04".to_vec();
        zip.resize(256, 0);
        let e = input_bytes(zip, &input(&[1, 64])).unwrap_err();
        assert!(e.message().starts_with("a NumPy .npz archive"), "{e}");
        assert!(e.help().is_some_and(|h| h.contains("--input NAME=FILE.npy")), "{e}");
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
    fn a_float_file_for_an_int8_input_says_what_to_do() {
        let f32_file = output_npy(&input(&[2]), &[0; 8]).unwrap();
        let mut t = input(&[2]);
        t.dtype = DType { code: DTypeCode::Int, bits: 8, lanes: 1 };
        let e = input_bytes(f32_file, &t).unwrap_err().to_string();
        assert!(e.contains("input x is int8 but the .npy file holds float32 ('<f4')"), "{e}");
        assert!(e.contains("scale") && e.contains(".astype(numpy.int8)"), "{e}");
    }

    #[test]
    fn big_endian_files_are_read() {
        let mut file = npy_with_shape("(2,)");
        let at = file.windows(3).position(|w| w == b"<f4").unwrap();
        file[at] = b'>';
        file.extend_from_slice(&1.5f32.to_be_bytes());
        file.extend_from_slice(&(-2.0f32).to_be_bytes());
        let raw: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(input_bytes(file, &input(&[2])).unwrap(), raw);
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
