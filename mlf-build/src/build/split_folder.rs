//! The split folder of external parameters (`params/<id>.bin` and `configure.json`) and its
//! packed archive.

use std::path::Path;

use serde_json::json;

use super::compile::write_if_changed;
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

/// Writes `dir/params/<id>.bin` for every file and `dir/configure.json`.
pub fn write_folder(dir: &Path, desc: &ModelDesc, split: &Split) -> Result<()> {
    for f in &split.files {
        write_if_changed(&dir.join(f.member()), &f.data)?;
    }
    let text = serde_json::to_string_pretty(&configure_json(desc, split)).expect("json");
    write_if_changed(&dir.join("configure.json"), text.as_bytes())
}

/// Packs a split folder (`configure.json`, `params/`, `code/`) into one tar at `out`, after
/// checking it as `cargo mlf inspect` does. Members are written in a stable order with fixed metadata.
pub fn pack_folder(dir: &Path, out: &Path) -> Result<usize> {
    let archive = Archive::open(dir)?;
    check_folder(&archive)?;
    let mut b = tar::Builder::new(Vec::new());
    let mut n = 0;
    for name in archive.names() {
        if !(name == "configure.json" || name.starts_with("params/") || name.starts_with("code/")) {
            continue;
        }
        let data = archive.get(name).expect("listed");
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, data.as_slice()).map_err(|e| Error::from(e).in_member(name.to_string()))?;
        n += 1;
    }
    let bytes = b.into_inner().map_err(Error::from)?;
    std::fs::write(out, bytes).map_err(|e| Error::from(e).in_file(out))?;
    Ok(n)
}
