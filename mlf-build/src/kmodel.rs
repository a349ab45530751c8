//! Kendryte kmodel: the build-time reader (placeholder until the kmodel reader lands).

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::ModelDesc;

/// What the build needs to know about a kmodel.
#[derive(Clone, Debug)]
pub struct KmodelExec {
    /// kmodel version.
    pub version: u32,
}

/// Reads a kmodel file.
pub fn read(path: &Path) -> Result<ModelDesc> {
    Err(Error::unsupported("kmodel files are not supported yet").in_file(path))
}
