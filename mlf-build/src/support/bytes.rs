//! Shared byte buffers (zero-copy slices of a file read once) and a bounds-checked little-endian
//! reader for the binary formats.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};

/// An immutable, cheaply clonable slice of a buffer that was read once from disk.
///
/// Members of a tar archive and tensors inside a `.params` file are `Bytes` that point into the
/// archive's single buffer, so no tensor data is copied while reading.
#[derive(Clone)]
pub struct Bytes {
    buf: Arc<[u8]>,
    range: Range<usize>,
}

impl Bytes {
    /// Wraps a whole buffer.
    pub fn new(data: impl Into<Arc<[u8]>>) -> Self {
        let buf = data.into();
        let range = 0..buf.len();
        Bytes { buf, range }
    }

    /// A sub-slice; `None` when `range` is not inside this slice.
    pub fn slice(&self, range: Range<usize>) -> Option<Bytes> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        Some(Bytes { buf: self.buf.clone(), range: self.range.start + range.start..self.range.start + range.end })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Offset of this slice inside the buffer it was read into (for example the offset of a
    /// tensor's data inside the tar file).
    pub fn offset_in_buffer(&self) -> usize {
        self.range.start
    }

    /// The bytes as UTF-8 text, or an error naming the problem.
    pub fn as_str(&self) -> Result<&str> {
        std::str::from_utf8(self.as_slice()).map_err(|e| Error::invalid(format!("not UTF-8 text: {e}")))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes at {})", self.len(), self.range.start)
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Bytes {}

/// A bounds-checked little-endian reader over a byte slice. Every read that would run past the
/// end is an [`ErrorKind::Truncated`] naming the offset.
#[derive(Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at offset 0.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// The current offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Takes `n` bytes.
    pub fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let available = self.remaining() as u64;
        if n > available {
            return Err(Error::new(ErrorKind::Truncated {
                offset: self.pos as u64,
                needed: n,
                available,
                count: None,
            }));
        }
        let n = n as usize;
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Takes `n` bytes and returns their range inside the reader's slice.
    pub fn take_range(&mut self, n: u64) -> Result<Range<usize>> {
        let start = self.pos;
        self.take(n)?;
        Ok(start..self.pos)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N as u64)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// Reads a little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `i32`.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `i64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// Reads a dmlc string: `u64` length, then that many bytes of UTF-8.
    pub fn dmlc_string(&mut self) -> Result<&'a str> {
        let at = self.pos;
        let len = self.u64()?;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes).map_err(|_| Error::invalid(format!("string at offset {at} is not UTF-8")))
    }

    /// Reads a count that is followed by at least `min_item_bytes` per item, and checks that the
    /// rest of the input can hold that many items (so no allocation is ever sized by an
    /// unchecked length). The error names the count and its offset in its message; the field is
    /// left to the caller.
    pub fn count(&mut self, min_item_bytes: u64) -> Result<u64> {
        let at = self.pos;
        let n = self.u64()?;
        let need = n.checked_mul(min_item_bytes.max(1));
        match need {
            Some(need) if need <= self.remaining() as u64 => Ok(n),
            _ => Err(Error::new(ErrorKind::Truncated {
                offset: at as u64,
                needed: need.unwrap_or(u64::MAX),
                available: self.remaining() as u64,
                count: Some(n),
            })),
        }
    }
}
