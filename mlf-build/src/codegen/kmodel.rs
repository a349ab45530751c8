//! Generated modules for kmodels (placeholder until the kmodel work lands).

use std::path::Path;

use proc_macro2::TokenStream;

use crate::error::{Error, Result};
use crate::model::ModelDesc;

/// The items of the module `include_model!` emits for a kmodel at `path` (absolute).
pub fn module_tokens(desc: &ModelDesc, path: &Path) -> Result<TokenStream> {
    let _ = (desc, path);
    Err(Error::unsupported("kmodel code generation is not implemented yet"))
}
