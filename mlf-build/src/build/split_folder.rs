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
        "digest": crate::plan::split::digest_hex(&split.binding.digest),
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

/// How [`pack_folder_with`] writes a pack.
#[derive(Clone, Debug, Default)]
pub struct PackOptions {
    /// The sequence number the pack header records (A/B slots: `Slots::open` takes the pack with
    /// the larger one).
    pub sequence: u64,
    /// The Ed25519 private key (PEM, PKCS#8: `cargo mlf keygen`, `openssl genpkey -algorithm
    /// ed25519`) to sign the pack with; `None` writes an unsigned pack.
    pub sign_with: Option<std::path::PathBuf>,
}

/// [`pack_folder_with`] with the default options: sequence 0, unsigned.
pub fn pack_folder(dir: &Path, out: &Path) -> Result<usize> {
    pack_folder_with(dir, out, &PackOptions::default())
}

/// Packs a split folder (`configure.json`, the parameter files it names, `code/`) into one tar
/// at `out`, after checking it as `cargo mlf inspect` does; a file in `params/` that
/// `configure.json` does not name, or any entry besides `SPLIT_ENTRIES`, is refused. The pack
/// starts with its header (`mlf-pack-header`: the sequence, the bytes it covers, the model digest
/// of `configure.json`, the xxh64 of the rest) and ends with an Ed25519 signature when a key is
/// given; members are written in a stable order with fixed metadata, as plain ustar headers (no
/// PAX or GNU extensions, so the device reader, which knows none, reads exactly what a host
/// reader does). Returns the number of files packed.
pub fn pack_folder_with(dir: &Path, out: &Path, options: &PackOptions) -> Result<usize> {
    let archive = Archive::open(dir)?;
    let entries = check_folder(&archive)?;
    let digest = config_digest(&archive)?.ok_or_else(|| {
        Error::invalid(
            "has no model digest (a split made by an older mlf): split the model again, so that the pack can be bound to its code",
        )
        .in_member("configure.json")
        .in_file(dir)
    })?;
    let key = options.sign_with.as_deref().map(read_private_key).transpose()?;
    let named: std::collections::BTreeSet<&str> = entries.iter().map(|e| e.file.as_str()).collect();
    let mut members = Vec::new();
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
        members.push((name, archive.get(name).expect("listed").as_slice()));
    }
    let opts = mlf_pack::write::PackOptions { sequence: options.sequence, digest, key: key.as_ref() };
    let bytes = mlf_pack::write::write_pack(&members, &opts).map_err(|e| Error::invalid(e).in_file(dir))?;
    write_file(out, &bytes)?;
    Ok(members.len())
}

/// The model digest `configure.json` records (`None` for a split made before it did).
pub fn config_digest(archive: &Archive) -> Result<Option<[u8; 32]>> {
    let Some(cfg) = archive.get("configure.json") else { return Ok(None) };
    let value: serde_json::Value = serde_json::from_slice(cfg.as_slice()).unwrap_or_default();
    let Some(hex) = value.get("digest").and_then(|d| d.as_str()) else { return Ok(None) };
    let bad = || Error::invalid(format!("`digest` is not 64 hex digits: {hex:?}")).in_member("configure.json");
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad().in_file(archive.path()));
    }
    let mut d = [0u8; 32];
    for (i, b) in d.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad().in_file(archive.path()))?;
    }
    Ok(Some(d))
}

/// The Ed25519 private key in the PEM file `path`.
fn read_private_key(path: &Path) -> Result<mlf_pack::sign::SigningKey> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::from(e).in_file(path))?;
    mlf_pack::sign::SigningKey::from_pem(&text).ok_or_else(|| {
        Error::invalid(
            "is not an Ed25519 private key in PEM (PKCS#8, -----BEGIN PRIVATE KEY-----); `cargo mlf keygen` writes one",
        )
        .in_file(path)
    })
}
