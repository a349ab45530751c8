//! I/O errors as mlf errors naming the file.

use std::path::Path;

use mlf_build::Error;

/// `.in_file(path)` on I/O results: the error becomes an [`Error`] naming `path`.
pub trait InFile<T> {
    /// Converts the error, naming `path`.
    fn in_file(self, path: impl AsRef<Path>) -> Result<T, Error>;
}

impl<T> InFile<T> for std::io::Result<T> {
    fn in_file(self, path: impl AsRef<Path>) -> Result<T, Error> {
        self.map_err(|e| Error::from(e).in_file(path))
    }
}
