//! A short text copied into a fixed buffer, so that errors that carry one stay `Copy` and free
//! of allocation (used by [`crate::Error`] and by parameter errors).

use core::fmt;

/// A short message copied out of C (for example the text given to `TVMAPISetLastError`),
/// truncated to fit a fixed buffer so that [`Error`](crate::Error) stays `Copy` and allocation-free.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Message {
    bytes: [u8; Message::CAPACITY],
    len: u8,
}

impl Message {
    /// Bytes kept; longer messages are truncated (keeping [`Error`](crate::Error) small enough to return by
    /// value on a microcontroller).
    pub const CAPACITY: usize = 48;

    /// An empty message.
    pub const fn empty() -> Self {
        Message { bytes: [0; Self::CAPACITY], len: 0 }
    }

    /// Makes the message empty (nothing to do when it is: the common case between runs).
    pub(crate) fn clear(&mut self) {
        if self.len != 0 {
            *self = Message::empty();
        }
    }

    /// Copies up to [`Message::CAPACITY`] bytes of `text` (cut at a character boundary).
    pub fn new(text: &str) -> Self {
        let mut end = text.len().min(Self::CAPACITY);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut m = Message::empty();
        m.bytes[..end].copy_from_slice(&text.as_bytes()[..end]);
        m.len = end as u8;
        m
    }

    /// The longest UTF-8 prefix of `bytes` (a C string's bytes, without its NUL), cut to
    /// [`Message::CAPACITY`] bytes.
    pub(crate) fn from_c_bytes(bytes: &[u8]) -> Self {
        let bytes = &bytes[..bytes.len().min(Self::CAPACITY)];
        match core::str::from_utf8(bytes) {
            Ok(t) => Self::new(t),
            Err(e) => Self::new(core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("")),
        }
    }

    /// Copies the last [`Message::CAPACITY`] bytes of `text` (for paths, whose end names the
    /// file), marking a cut with a leading `…`.
    pub fn tail(text: &str) -> Self {
        if text.len() <= Self::CAPACITY {
            return Self::new(text);
        }
        let mut start = text.len() - (Self::CAPACITY - '…'.len_utf8());
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let mut m = Message::empty();
        let mut n = 0;
        for part in ["…", &text[start..]] {
            m.bytes[n..n + part.len()].copy_from_slice(part.as_bytes());
            n += part.len();
        }
        m.len = n as u8;
        m
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
