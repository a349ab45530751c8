//! TVM module serialization blobs (placeholder until the blob reader lands).

use std::path::Path;

use crate::error::{Error, Result};

/// Inspects a TVM export; returns the JSON report and a readable table.
pub fn inspect(path: &Path) -> Result<(serde_json::Value, String)> {
    Err(Error::unsupported("TVM module blobs are not supported yet").in_file(path))
}
