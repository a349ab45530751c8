//! A bounds-checked little-endian reader over a model's bytes. Every read past the end is a
//! [`KmodelError::Truncated`] naming the part and the absolute offset.

use crate::error::{KmodelError, Part};

/// Reads little-endian values from `data`, reporting offsets relative to the model start
/// (`base` is the offset of `data[0]` in the model).
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
    part: Part,
}

impl<'a> Reader<'a> {
    /// A reader over `data`, which starts at model offset `base`.
    pub fn new(data: &'a [u8], base: usize, part: Part) -> Self {
        Reader { data, pos: 0, base, part }
    }

    /// Current position inside `data`.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Moves to `pos` (inside `data`), or fails when it is past the end.
    pub fn seek(&mut self, pos: usize) -> Result<(), KmodelError> {
        if pos > self.data.len() {
            return Err(self.truncated(pos - self.pos.min(pos)));
        }
        self.pos = pos;
        Ok(())
    }

    fn truncated(&self, needed: usize) -> KmodelError {
        KmodelError::Truncated {
            part: self.part,
            offset: (self.base + self.pos) as u64,
            needed: needed as u64,
            available: self.remaining() as u64,
        }
    }

    /// Takes `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], KmodelError> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), KmodelError> {
        self.bytes(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], KmodelError> {
        let s = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A `u8`.
    pub fn u8(&mut self) -> Result<u8, KmodelError> {
        Ok(self.array::<1>()?[0])
    }
    /// A `u32`.
    pub fn u32(&mut self) -> Result<u32, KmodelError> {
        self.array().map(u32::from_le_bytes)
    }
    /// An `i32`.
    pub fn i32(&mut self) -> Result<i32, KmodelError> {
        self.array().map(i32::from_le_bytes)
    }
    /// An `f32`.
    pub fn f32(&mut self) -> Result<f32, KmodelError> {
        self.array().map(f32::from_le_bytes)
    }
    /// A `u64`.
    pub fn u64(&mut self) -> Result<u64, KmodelError> {
        self.array().map(u64::from_le_bytes)
    }
}

/// The end of a table of `count` items of `item` bytes at `from`, when it lies inside a file of
/// `file` bytes.
pub(crate) fn table_end(count: u32, item: usize, from: usize, file: usize) -> Option<usize> {
    (count as usize).checked_mul(item).and_then(|n| n.checked_add(from)).filter(|&e| e <= file)
}

/// One layer (V3) or node (V4) body.
#[derive(Clone, Copy, Debug)]
pub struct Body<'a> {
    /// Layer or node index.
    pub index: u32,
    /// Layer type (V3) or opcode (V4), from its header.
    pub kind: u32,
    /// Body size, from its header.
    pub size: u32,
    /// Offset of the body in the model.
    pub at: usize,
    /// The body's bytes (the last body's may be short of `size` by its final padding).
    pub bytes: &'a [u8],
}

/// The bodies of a layer or node table: `count` headers of (kind, size) at `headers`, and
/// the bodies laid out one after the other from `start`. Each body must lie inside the file,
/// except that the last may miss up to 7 bytes of final padding; the first that does not is a
/// [`KmodelError::BodyOutOfBounds`], after which the iteration ends.
#[derive(Clone, Debug)]
pub struct Bodies<'a> {
    file: &'a [u8],
    headers: usize,
    count: u32,
    next: u32,
    at: u64,
}

impl<'a> Bodies<'a> {
    /// The bodies of `count` layers or nodes (see [`Bodies`]); the table of headers was
    /// checked to lie inside `file`.
    pub fn new(file: &'a [u8], headers: usize, count: u32, start: usize) -> Self {
        Bodies { file, headers, count, next: 0, at: start as u64 }
    }

    /// Where the bodies read so far end (capped at the file's end).
    pub fn end(&self) -> usize {
        (self.at as usize).min(self.file.len())
    }
}

impl<'a> Iterator for Bodies<'a> {
    type Item = Result<Body<'a>, KmodelError>;

    fn next(&mut self) -> Option<Self::Item> {
        let index = self.next;
        if index >= self.count {
            return None;
        }
        let o = self.headers + index as usize * 8;
        let (kind, size) = (u32_at(self.file, o), u32_at(self.file, o + 4));
        let (end, file_len) = (self.at + size as u64, self.file.len() as u64);
        if end > file_len + 7 || (end > file_len && index + 1 != self.count) {
            self.next = self.count;
            return Some(Err(KmodelError::BodyOutOfBounds { index, end, file_len }));
        }
        let at = self.at as usize;
        let body = Body { index, kind, size, at, bytes: &self.file[at..end.min(file_len) as usize] };
        self.at = end;
        self.next += 1;
        Some(Ok(body))
    }
}

/// `u32` at `off` of a slice whose bounds were already checked by a parser; 0 when out of range
/// (never happens for validated data).
pub(crate) fn u32_at(data: &[u8], off: usize) -> u32 {
    match data.get(off..off + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// `f32` at byte `off` (see [`u32_at`]).
pub(crate) fn f32_at(data: &[u8], off: usize) -> f32 {
    f32::from_bits(u32_at(data, off))
}

/// `u64` at byte `off` (see [`u32_at`]).
pub(crate) fn u64_at(data: &[u8], off: usize) -> u64 {
    match data.get(off..off + 8) {
        Some(b) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        }
        None => 0,
    }
}
