//! The run-time error: small, `Copy`, and free of allocation.

use core::fmt;

/// A short message copied out of C (for example the text given to `TVMAPISetLastError`),
/// truncated to fit a fixed buffer so that [`Error`] stays `Copy` and allocation-free.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Message {
    bytes: [u8; Message::CAPACITY],
    len: u8,
}

impl Message {
    /// Bytes kept; longer messages are truncated (keeping [`Error`] small enough to return by
    /// value on a microcontroller).
    pub const CAPACITY: usize = 48;

    /// An empty message.
    pub const fn empty() -> Self {
        Message { bytes: [0; Self::CAPACITY], len: 0 }
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

// The size the documentation gives (small enough to return by value on a microcontroller);
// on 32-bit targets it is smaller.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Error>() == 112, "Error is documented as 112 bytes on 64-bit hosts");

/// What can go wrong while running a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Another model is running in this program (without `std`, one model runs at a time; with
    /// `std`, one per thread).
    Busy,
    /// A generated operator returned non-zero.
    OperatorFailed {
        /// Position of the call in the model's call sequence.
        index: u16,
        /// The C function.
        function: &'static str,
        /// What it returned.
        code: i32,
        /// The last message given to `TVMAPISetLastError`, if any.
        message: Message,
    },
    /// `TVMBackendAllocWorkspace` could not serve a request from the static arena (the arena
    /// was sized at build time, so this means the model asked for more than it declared).
    WorkspaceExhausted {
        /// Bytes requested.
        requested: u64,
        /// Bytes left in the arena.
        available: u64,
    },
    /// `TVMBackendFreeWorkspace` was called out of LIFO order or with a foreign pointer.
    BadWorkspaceFree,
    /// An external parameter could not be supplied.
    Param(crate::params::ParamError),
    /// A kmodel could not be parsed or run.
    Kmodel(crate::kmodel::KmodelError),
}

impl From<crate::params::ParamError> for Error {
    fn from(e: crate::params::ParamError) -> Self {
        Error::Param(e)
    }
}

impl From<crate::kmodel::KmodelError> for Error {
    fn from(e: crate::kmodel::KmodelError) -> Self {
        Error::Kmodel(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Busy => f.write_str("another model is running (one model runs at a time per thread)"),
            Error::OperatorFailed { index, function, code, message } => {
                write!(f, "operator {index} ({function}) returned {code}")?;
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            Error::WorkspaceExhausted { requested, available } => write!(
                f,
                "workspace request of {requested} bytes exceeds the {available} bytes left in the static arena"
            ),
            Error::BadWorkspaceFree => f.write_str("workspace freed out of order or with a foreign pointer"),
            Error::Param(e) => write!(f, "{e}"),
            Error::Kmodel(e) => write!(f, "kmodel: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
