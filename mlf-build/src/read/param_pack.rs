//! The configuration of a split folder or packed parameter archive (`configure.json`, as
//! `cargo mlf split` writes it), checked against its files.

use super::archive::Archive;
use super::json::{self, J};
use crate::error::{Error, Result};
use crate::support::hash::{id_for, xxh64};

/// One entry of a split folder's `configure.json`, as checked by [`check_folder`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigEntry {
    /// Identifier.
    pub id: String,
    /// File path relative to the folder.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// xxh64 as recorded.
    pub xxh64: String,
    /// dtype as recorded.
    pub dtype: String,
    /// Shape as recorded.
    pub shape: Vec<u64>,
    /// Tensor names.
    pub names: Vec<String>,
}

/// Reads `configure.json` of a split folder (or the same member of a packed archive) and checks
/// every entry against its file: present, the recorded size, the recorded hash, and named
/// `params/<id>.bin` (how `no_std` sources resolve identifiers). Errors name the identifier and
/// the path.
pub fn check_folder(archive: &Archive) -> Result<Vec<ConfigEntry>> {
    let cfg = archive.get("configure.json").ok_or_else(|| Error::missing("configure.json").in_file(archive.path()))?;
    let value = json::parse(cfg).map_err(|e| e.in_member("configure.json").in_file(archive.path()))?;
    let root = J::root(&value);
    let located = |e: Error| e.in_member("configure.json").in_file(archive.path());
    let format = root.get("format").and_then(|f| f.str().map(str::to_string)).map_err(located)?;
    if format != "mlf-params" {
        return Err(located(
            root.get("format").expect("present").err(format!("expected \"mlf-params\", found {format:?}")),
        ));
    }
    let mut out = Vec::new();
    for (id, e) in root.get("params").and_then(|p| p.entries()).map_err(located)? {
        let entry = ConfigEntry {
            id: id.to_string(),
            file: e.get("file").and_then(|f| f.str().map(str::to_string)).map_err(located)?,
            bytes: e.get("bytes").and_then(|b| b.u64()).map_err(located)?,
            xxh64: e.get("xxh64").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            dtype: e.get("dtype").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            shape: e.get("shape").and_then(|s| s.array()?.iter().map(|d| d.u64()).collect()).map_err(located)?,
            names: e
                .opt("names")
                .map_err(located)?
                .map(|n| n.array()?.iter().map(|s| s.str().map(str::to_string)).collect())
                .transpose()
                .map_err(located)?
                .unwrap_or_default(),
        };
        let expected = format!("params/{id}.bin");
        if entry.file != expected {
            return Err(located(
                Error::invalid(format!(
                    "identifier {id} maps to {:?}; parameters must be stored as {expected:?}",
                    entry.file
                ))
                .at(format!("params.{id}.file")),
            ));
        }
        let data = archive.get(&entry.file).ok_or_else(|| {
            Error::missing(format!("the file of identifier {id}")).in_member(entry.file.clone()).in_file(archive.path())
        })?;
        if data.len() as u64 != entry.bytes {
            return Err(Error::mismatch(format!(
                "identifier {id}: {} bytes, configure.json says {}",
                data.len(),
                entry.bytes
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        if format!("{:016x}", xxh64(data)) != entry.xxh64 || id_for(data) != id {
            return Err(Error::mismatch(format!(
                "identifier {id}: the file's hash does not match (changed or damaged)"
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        out.push(entry);
    }
    Ok(out)
}
