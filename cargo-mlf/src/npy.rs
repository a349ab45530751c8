//! Tensor files for `cargo mlf run`: `.npy` (read and written with `npyz`) or raw
//! little-endian bytes.

use std::path::Path;

use mlf_build::__private::DTypeCode;
use mlf_build::Error;
use mlf_build::TensorInfo;

use crate::io_error::InFile;

/// Reads an input file as raw little-endian bytes of `t`'s dtype and size.
pub fn read_input(path: &Path, t: &TensorInfo) -> Result<Vec<u8>, Error> {
    let data = std::fs::read(path).in_file(path)?;
    let bytes = if data.starts_with(b"\x93NUMPY") { from_npy(&data, t).map_err(|e| e.in_file(path))? } else { data };
    if bytes.len() as u64 != t.bytes() {
        return Err(Error::mismatch(format!(
            "{} bytes, but input {} is {} {:?} ({} bytes)",
            bytes.len(),
            t.name,
            t.dtype,
            t.shape,
            t.bytes()
        ))
        .in_file(path));
    }
    Ok(bytes)
}

fn from_npy(data: &[u8], t: &TensorInfo) -> Result<Vec<u8>, Error> {
    let npy = npyz::NpyFile::new(data).map_err(|e| Error::invalid(format!("not a valid .npy file: {e}")))?;
    if npy.order() == npyz::Order::Fortran {
        return Err(Error::unsupported(
            "Fortran-order .npy files (fortran_order: True) are not read: their elements would be taken \
             in the wrong order; save the array in C order (numpy.ascontiguousarray)",
        ));
    }
    let numel: u64 = npy.shape().iter().product();
    if numel != t.numel() {
        return Err(Error::mismatch(format!(
            "shape {:?} has {numel} elements, input {} needs {:?}",
            npy.shape(),
            t.name,
            t.shape
        )));
    }
    let bad = |e: std::io::Error| {
        Error::mismatch(format!("the .npy dtype does not match input {} ({}): {e}", t.name, t.dtype))
    };
    macro_rules! convert {
        ($ty:ty) => {
            npy.into_vec::<$ty>().map_err(bad)?.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
    }
    Ok(match (t.dtype.code, t.dtype.bits) {
        (DTypeCode::Float, 32) => convert!(f32),
        (DTypeCode::Float, 64) => convert!(f64),
        (DTypeCode::Int, 8) => convert!(i8),
        (DTypeCode::Int, 16) => convert!(i16),
        (DTypeCode::Int, 32) => convert!(i32),
        (DTypeCode::Int, 64) => convert!(i64),
        (DTypeCode::UInt, 8) => convert!(u8),
        (DTypeCode::UInt, 16) => convert!(u16),
        (DTypeCode::UInt, 32) => convert!(u32),
        (DTypeCode::UInt, 64) => convert!(u64),
        _ => return Err(Error::unsupported(format!("dtype {} in .npy files", t.dtype))),
    })
}

/// Writes raw little-endian output bytes as `.npy` with the output's dtype and shape.
pub fn write_output(path: &Path, t: &TensorInfo, raw: &[u8]) -> Result<(), Error> {
    use npyz::WriterBuilder;
    let mut out = Vec::new();
    macro_rules! write {
        ($ty:ty) => {{
            let mut w =
                npyz::WriteOptions::new().default_dtype().shape(&t.shape).writer(&mut out).begin_nd().in_file(path)?;
            let size = std::mem::size_of::<$ty>();
            for c in raw.chunks_exact(size) {
                w.push(&<$ty>::from_le_bytes(c.try_into().expect("chunk"))).in_file(path)?;
            }
            w.finish().in_file(path)?;
        }};
    }
    match (t.dtype.code, t.dtype.bits) {
        (DTypeCode::Float, 32) => write!(f32),
        (DTypeCode::Float, 64) => write!(f64),
        (DTypeCode::Int, 8) => write!(i8),
        (DTypeCode::Int, 16) => write!(i16),
        (DTypeCode::Int, 32) => write!(i32),
        (DTypeCode::Int, 64) => write!(i64),
        (DTypeCode::UInt, 8) => write!(u8),
        (DTypeCode::UInt, 16) => write!(u16),
        (DTypeCode::UInt, 32) => write!(u32),
        (DTypeCode::UInt, 64) => write!(u64),
        _ => return Err(Error::unsupported(format!("dtype {} in .npy files", t.dtype))),
    }
    std::fs::write(path, out).in_file(path)
}
