//! TVM's parameter file (`parameters/<m>.params`, `relay.save_param_dict`) and the `NDArray`
//! record it shares with module blobs.
//!
//! Tensor data is not copied: each tensor is a [`Bytes`] slice of the buffer the file was read into.

use crate::error::{Error, ErrorKind, Result};
use crate::read::dmlc;
use crate::support::bytes::{Bytes, Reader};
use crate::support::dtype::{self, DType};

/// `kTVMNDArrayListMagic`.
pub const LIST_MAGIC: u64 = super::sniff::TVM_PARAMS_MAGIC;
/// `kTVMNDArrayMagic`.
pub const NDARRAY_MAGIC: u64 = 0xDD5E_40F0_96B4_A13F;
/// Most dimensions a stored tensor may have.
pub const MAX_NDIM: i32 = 32;
/// Smallest possible `NDArray` record (magic, reserved, device, ndim, dtype, nbytes), for
/// bounding a count of records by the bytes left.
pub const MIN_NDARRAY_BYTES: u64 = 8 + 8 + 4 + 4 + 4 + 4 + 8;

/// One stored tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamTensor {
    /// Name (graph arg-node name, e.g. `p0`).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// The data, little-endian, row-major.
    pub data: Bytes,
}

/// Parses a `.params` file held in `buf`.
pub fn parse_params(buf: &Bytes) -> Result<Vec<ParamTensor>> {
    let mut r = Reader::new(buf.as_slice());
    let magic = r.u64()?;
    if magic != LIST_MAGIC {
        return Err(Error::new(ErrorKind::BadMagic { found: magic, expected: LIST_MAGIC }).at("header"));
    }
    let _reserved = r.u64()?;
    let names = dmlc::vec_string(&mut r).map_err(|e| e.at("names"))?;
    let n_names = names.len() as u64;
    let n_arrays = r.count(8).map_err(|e| e.at("arrays"))?;
    if n_arrays != n_names {
        return Err(Error::mismatch(format!("{n_names} names but {n_arrays} arrays")).at("arrays"));
    }
    // Trailing bytes after the last array are tolerated, as TVM does.
    read_named_tensors(buf, &mut r, names)
}

/// Reads one `NDArray` record per name from `r` (a reader over all of `buf`) and checks that no
/// name appears twice. Shared by `.params` and the module-blob payloads that embed tensors
/// (graph executor factory, constant loader).
pub fn read_named_tensors(buf: &Bytes, r: &mut Reader<'_>, names: Vec<String>) -> Result<Vec<ParamTensor>> {
    let mut out = Vec::new();
    for (i, name) in names.into_iter().enumerate() {
        let (dtype, shape, range) = read_ndarray(r).map_err(|e| e.at(format!("arrays[{i}] ({name})")))?;
        let data = buf
            .slice(range)
            .ok_or_else(|| Error::invalid("tensor data lies outside the buffer").at(format!("arrays[{i}]")))?;
        out.push(ParamTensor { name, dtype, shape, data });
    }
    let mut seen = std::collections::HashSet::new();
    for p in &out {
        if !seen.insert(p.name.as_str()) {
            return Err(Error::invalid(format!("parameter {:?} appears twice", p.name)).at("names"));
        }
    }
    Ok(out)
}

/// Reads one `NDArray` record (from its magic on) and returns dtype, shape and the range of its
/// data inside the reader's slice.
pub fn read_ndarray(r: &mut Reader<'_>) -> Result<(DType, Vec<u64>, std::ops::Range<usize>)> {
    let magic = r.u64()?;
    if magic != NDARRAY_MAGIC {
        return Err(Error::new(ErrorKind::BadMagic { found: magic, expected: NDARRAY_MAGIC }).at("magic"));
    }
    let _reserved = r.u64()?;
    let device_type = r.i32()?;
    let _device_id = r.i32()?;
    if device_type != 1 {
        return Err(
            Error::invalid(format!("device_type {device_type}: only CPU (1) tensors can be stored")).at("device_type")
        );
    }
    let ndim = r.i32()?;
    if !(0..=MAX_NDIM).contains(&ndim) {
        return Err(Error::invalid(format!("ndim {ndim} is out of range (0 to {MAX_NDIM})")).at("ndim"));
    }
    let code = r.u8()?;
    let bits = r.u8()?;
    let lanes = r.u16()?;
    if bits == 0 || lanes == 0 {
        return Err(Error::invalid(format!("dtype with {bits} bits and {lanes} lanes")).at("dtype"));
    }
    let dtype = DType::from_dl(code, bits, lanes);
    let mut shape = Vec::with_capacity(ndim as usize);
    for k in 0..ndim {
        let d = r.i64()?;
        if d < 0 {
            return Err(Error::invalid(format!("negative dimension {d}")).at(format!("shape[{k}]")));
        }
        shape.push(d as u64);
    }
    let data_bytes = r.i64()?;
    // TVM writes ((bits + 7) / 8) × numel: lanes are not included.
    let expected = dtype::numel(&shape)
        .and_then(|n| n.checked_mul((bits as u64).div_ceil(8)))
        .ok_or_else(|| Error::invalid("tensor size overflows").at("shape"))?;
    if data_bytes < 0 || data_bytes as u64 != expected {
        return Err(Error::mismatch(format!("data_bytes is {data_bytes}, but {dtype} {shape:?} needs {expected}"))
            .at("data_bytes"));
    }
    let range = r.take_range(data_bytes as u64).map_err(|e| e.at("data"))?;
    Ok((dtype, shape, range))
}
