//! The split folder of external parameters (`params/<id>.bin` and `configure.json`) and its
//! packed archive.

use std::path::Path;

use serde_json::json;

use super::output::{OutputDir, write_file};
use crate::error::{Error, Result};
use crate::model::ModelDesc;
use crate::plan::split::Split;
use crate::read::archive::Archive;
use crate::read::param_pack::check_folder;

/// `configure.json`: identifier → file, size, hash, dtype, shape, tensor names.
pub fn configure_json(desc: &ModelDesc, split: &Split) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> = split
        .files
        .iter()
        .map(|f| {
            (
                f.id.clone(),
                json!({
                    "file": f.member(),
                    "bytes": f.bytes(),
                    "xxh64": format!("{:016x}", f.xxh64),
                    "dtype": f.dtype.to_string(),
                    "shape": f.shape,
                    "names": f.names,
                }),
            )
        })
        .collect();
    json!({
        "format": "mlf-params",
        "version": 1,
        "model": desc.name,
        "source": desc.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        "params": params,
    })
}

/// The entries of a split folder that mlf writes; a folder holding anything else is not written
/// into (it is not a split folder, and `pack` would otherwise be asked to pack foreign files).
pub const SPLIT_ENTRIES: &[&str] = &["configure.json", "params", "code"];

/// Writes `dir/params/<id>.bin` for every file and `dir/configure.json`, never through a link.
///
/// `dir` must be empty, missing, or an earlier split folder (only [`SPLIT_ENTRIES`] in it): a
/// folder with anything else is refused, naming the entry. Parameter files of an earlier split
/// that this one does not have are removed, so the folder holds exactly this split.
pub fn write_folder(dir: &Path, desc: &ModelDesc, split: &Split) -> Result<()> {
    let out = OutputDir::create(dir)?;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir))? {
        let entry = entry.map_err(|e| Error::from(e).in_file(dir))?;
        let name = entry.file_name();
        if !SPLIT_ENTRIES.iter().any(|n| name == **n) {
            return Err(Error::invalid(format!(
                "holds {}, which is not part of a split folder; mlf writes a split only into an empty folder \
                 or over an earlier split (configure.json, params/, code/)",
                crate::error::shown(&name.to_string_lossy())
            ))
            .in_file(dir));
        }
    }
    let wanted: std::collections::BTreeSet<String> = split.files.iter().map(|f| f.member()).collect();
    if let Ok(entries) = std::fs::read_dir(dir.join("params")) {
        for entry in entries.flatten() {
            let rel = format!("params/{}", entry.file_name().to_string_lossy());
            if !wanted.contains(&rel) {
                out.remove(&rel)?;
            }
        }
    }
    for f in &split.files {
        out.write(&f.member(), &f.data)?;
    }
    let text = serde_json::to_string_pretty(&configure_json(desc, split)).expect("json");
    out.write("configure.json", text.as_bytes())?;
    Ok(())
}

/// Packs a split folder (`configure.json`, the parameter files it names, `code/`) into one tar
/// at `out`, after checking it as `cargo mlf inspect` does; a file in `params/` that
/// `configure.json` does not name, or any entry besides `SPLIT_ENTRIES`, is refused. Members
/// are written in a stable order with fixed metadata, as plain ustar headers (no PAX or GNU
/// extensions, so the device reader, which knows none, reads exactly what a host reader does).
pub fn pack_folder(dir: &Path, out: &Path) -> Result<usize> {
    let archive = Archive::open(dir)?;
    let entries = check_folder(&archive)?;
    let named: std::collections::BTreeSet<&str> = entries.iter().map(|e| e.file.as_str()).collect();
    let mut b = tar::Builder::new(Vec::new());
    let mut n = 0;
    for name in archive.names() {
        let ok = name == "configure.json" || named.contains(name) || name.starts_with("code/");
        if !ok {
            return Err(Error::invalid(
                "is not named by configure.json and is not code: a split folder holds only what `cargo mlf split` \
                 writes; remove it or split again into an empty folder",
            )
            .in_member(name.to_string())
            .in_file(dir));
        }
        let data = archive.get(name).expect("listed");
        let mut h = tar::Header::new_ustar();
        h.set_path(name).map_err(|e| {
            Error::invalid(format!("the name does not fit a plain ustar header: {e}")).in_member(name.to_string())
        })?;
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        b.append(&h, data.as_slice()).map_err(|e| Error::from(e).in_member(name.to_string()))?;
        n += 1;
    }
    let bytes = b.into_inner().map_err(Error::from)?;
    write_file(out, &bytes)?;
    Ok(n)
}
