//! The run-time error: small, `Copy`, and free of allocation.

use core::fmt;

pub use crate::message::Message;

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
