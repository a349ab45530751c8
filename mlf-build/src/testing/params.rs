//! Writes TVM `.params` files.

use crate::read::dmlc;
use crate::read::params::{LIST_MAGIC, NDARRAY_MAGIC};
use crate::support::dtype::DType;

/// Writes a `.params` file (for tests; the blob writer uses [`write_ndarray`]).
pub fn write_params(tensors: &[(&str, DType, &[u64], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&LIST_MAGIC.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let names: Vec<&str> = tensors.iter().map(|(name, ..)| *name).collect();
    dmlc::put_vec_string(&mut out, &names);
    dmlc::put_u64(&mut out, tensors.len() as u64);
    for (_, dtype, shape, data) in tensors {
        write_ndarray(&mut out, *dtype, shape, data);
    }
    out
}

/// Appends one `NDArray` record.
pub fn write_ndarray(out: &mut Vec<u8>, dtype: DType, shape: &[u64], data: &[u8]) {
    out.extend_from_slice(&NDARRAY_MAGIC.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&1i32.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&(shape.len() as i32).to_le_bytes());
    out.push(dtype.code.code());
    out.push(dtype.bits);
    out.extend_from_slice(&dtype.lanes.to_le_bytes());
    for d in shape {
        out.extend_from_slice(&(*d as i64).to_le_bytes());
    }
    out.extend_from_slice(&(data.len() as i64).to_le_bytes());
    out.extend_from_slice(data);
}
