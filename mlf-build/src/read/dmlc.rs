//! dmlc stream primitives as TVM serializes them (little-endian): `std::string` is a `u64` length
//! and the bytes, `std::vector<POD>` a `u64` count and the raw elements, `std::vector<std::string>`
//! a `u64` count and each string. Shared by `.params` files and module blobs. Readers bound every
//! count by the bytes left ([`Reader::count`]: no allocation is sized by an unchecked length);
//! writers are their exact inverse.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::support::bytes::Reader;
use crate::support::dtype::DType;

/// A plain item of a `std::vector<POD>`: its stored size, how to read it and how to write it.
pub trait Pod: Copy {
    /// Bytes one item takes.
    const BYTES: u64;
    /// Reads one item.
    fn read(r: &mut Reader<'_>) -> Result<Self>;
    /// Appends one item.
    fn put(self, out: &mut Vec<u8>);
}

/// Little-endian integers (`i32` also for vectors of `int`-sized enums).
macro_rules! pod_int {
    ($($t:ident),*) => {$(
        impl Pod for $t {
            const BYTES: u64 = std::mem::size_of::<$t>() as u64;
            fn read(r: &mut Reader<'_>) -> Result<Self> {
                r.$t()
            }
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
pod_int!(u64, u32, i32);

/// A `DLDataType`: `u8 code, u8 bits, u16 lanes`.
impl Pod for DType {
    const BYTES: u64 = 4;
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let code = r.u8()?;
        let bits = r.u8()?;
        let lanes = r.u16()?;
        Ok(DType::from_dl(code, bits, lanes))
    }
    fn put(self, out: &mut Vec<u8>) {
        out.push(self.code.code());
        out.push(self.bits);
        out.extend_from_slice(&self.lanes.to_le_bytes());
    }
}

/// Reads a `std::string` whose bytes need not be UTF-8 (kernel binaries, payloads) and returns
/// the range of its bytes inside the reader's slice.
pub fn bytes(r: &mut Reader<'_>) -> Result<Range<usize>> {
    let len = r.u64()?;
    r.take_range(len)
}

/// Reads a UTF-8 `std::string`.
pub fn string(r: &mut Reader<'_>) -> Result<String> {
    Ok(r.dmlc_string()?.to_string())
}

/// Reads a `std::vector<T>` of plain items.
pub fn vec<T: Pod>(r: &mut Reader<'_>) -> Result<Vec<T>> {
    let n = r.count(T::BYTES)?;
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        v.push(T::read(r)?);
    }
    Ok(v)
}

/// Reads a `std::vector<std::string>`.
pub fn vec_string(r: &mut Reader<'_>) -> Result<Vec<String>> {
    let n = r.count(8)?;
    let mut v = Vec::with_capacity(n as usize);
    for i in 0..n {
        v.push(string(r).map_err(|e| e.at(format!("[{i}]")))?);
    }
    Ok(v)
}

/// Requires the whole slice to have been read.
pub fn expect_end(r: &Reader<'_>, what: &str) -> Result<()> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(Error::mismatch(format!("{} bytes are left over at offset {} after the {what}", r.remaining(), r.pos())))
    }
}

/// Appends a `u64`.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a `std::string` (any bytes).
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends a `std::vector<std::string>`.
pub fn put_vec_string<S: AsRef<str>>(out: &mut Vec<u8>, v: &[S]) {
    put_u64(out, v.len() as u64);
    for s in v {
        put_bytes(out, s.as_ref().as_bytes());
    }
}

/// Appends a `std::vector<T>` of plain items.
pub fn put_vec<T: Pod>(out: &mut Vec<u8>, v: &[T]) {
    put_u64(out, v.len() as u64);
    for x in v {
        x.put(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut out = Vec::new();
        put_bytes(&mut out, b"abc");
        put_vec(&mut out, &[0u64, 1, 1]);
        put_vec_string(&mut out, &["x", "yz"]);
        put_vec(&mut out, &[DType::F32]);
        put_vec(&mut out, &[7u32]);
        put_vec(&mut out, &[-1i32]);
        let mut r = Reader::new(&out);
        assert_eq!(&out[bytes(&mut r).unwrap()], b"abc");
        assert_eq!(vec::<u64>(&mut r).unwrap(), vec![0, 1, 1]);
        assert_eq!(vec_string(&mut r).unwrap(), vec!["x", "yz"]);
        assert_eq!(vec::<DType>(&mut r).unwrap(), vec![DType::F32]);
        assert_eq!(vec::<u32>(&mut r).unwrap(), vec![7]);
        assert_eq!(vec::<i32>(&mut r).unwrap(), vec![-1]);
        expect_end(&r, "test").unwrap();
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let mut out = Vec::new();
        put_u64(&mut out, u64::MAX);
        let e = vec::<u64>(&mut Reader::new(&out)).unwrap_err();
        assert_eq!(e.field, None);
        assert_eq!(
            e.to_string(),
            format!("truncated: a count of {} items needs {} bytes at offset 0, but only 0 remain", u64::MAX, u64::MAX)
        );
        assert!(vec_string(&mut Reader::new(&out)).is_err());
        assert!(bytes(&mut Reader::new(&out)).is_err());
    }
}
