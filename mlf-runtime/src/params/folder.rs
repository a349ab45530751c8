//! Sources on a host file system (`std`): a split folder and a packed archive file, both read
//! through their `configure.json`.

use std::collections::HashMap;
use std::format;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use super::{ParamError, ParamErrorKind, ParamRef, ParamSource};
use crate::message::Message;

/// Largest `configure.json` read (16 MiB, far more than any model's table of parameters).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Largest packed archive [`PackedArchive::open`] reads into memory (4 GiB).
pub const MAX_ARCHIVE_BYTES: u64 = 4 << 30;

/// Parses `configure.json`: identifier → relative file path (each entry must record its size;
/// the size checked is the generated code's).
fn parse_config(text: &[u8], origin: &str) -> Result<HashMap<String, String>, ParamError> {
    let bad = || ParamError::new(ParamErrorKind::ConfigMalformed, "", origin);
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(bad());
    }
    let v: serde_json::Value = serde_json::from_slice(text).map_err(|_| bad())?;
    let params = v.get("params").and_then(|p| p.as_object()).ok_or_else(bad)?;
    let mut out = HashMap::new();
    for (id, entry) in params {
        let file = entry.get("file").and_then(|f| f.as_str()).ok_or_else(bad)?;
        entry.get("bytes").and_then(|b| b.as_u64()).ok_or_else(bad)?;
        if file.starts_with('/') || file.split('/').any(|c| c == "..") {
            return Err(ParamError::new(ParamErrorKind::ConfigMalformed, id, file));
        }
        out.insert(id.clone(), file.to_string());
    }
    Ok(out)
}

/// Reads the regular file `path` of at most `limit` bytes. What is not a regular file (a FIFO
/// would block, `/dev/zero` never ends) is refused before it is opened; a larger file is refused
/// before it is read. Errors are `kind` (`Missing`, `ConfigMissing`), `Io` for the rest.
fn read_regular(path: &Path, limit: u64, kind: ParamErrorKind, id: &str) -> Result<Vec<u8>, ParamError> {
    let shown = path.display().to_string();
    let meta = fs::metadata(path).map_err(|_| ParamError::new(kind, id, &shown))?;
    if !meta.is_file() {
        return Err(ParamError::new(ParamErrorKind::Io, id, &shown));
    }
    let f = fs::File::open(path).map_err(|_| ParamError::new(kind, id, &shown))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(ParamError::new(ParamErrorKind::Io, id, &shown));
    }
    let mut data = Vec::new();
    f.take(limit.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|_| ParamError::new(ParamErrorKind::Io, id, &shown))?;
    if data.len() as u64 > limit {
        return Err(ParamError::size(limit as usize, data.len(), id, &shown));
    }
    Ok(data)
}

/// A split folder: `configure.json` and the files it names (`cargo mlf split` output).
#[derive(Debug)]
pub struct Folder {
    dir: PathBuf,
    config: HashMap<String, String>,
}

impl Folder {
    /// Opens `dir` and reads its `configure.json`.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ParamError> {
        let dir = dir.as_ref().to_path_buf();
        let cfg = dir.join("configure.json");
        let origin = cfg.display().to_string();
        let text = read_regular(&cfg, MAX_CONFIG_BYTES, ParamErrorKind::ConfigMissing, "")?;
        Ok(Folder { config: parse_config(&text, &origin)?, dir })
    }

    fn entry(&self, p: &ParamRef) -> Result<&String, ParamError> {
        self.config.get(p.id).ok_or_else(|| {
            ParamError::new(ParamErrorKind::UnknownId, p.id, &self.dir.join("configure.json").display().to_string())
        })
    }
}

impl ParamSource for Folder {
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        let file = self.entry(p)?;
        let path = self.dir.join(file);
        let shown = path.display().to_string();
        // Checked to be a regular file before it is opened: a FIFO would block.
        let meta = fs::metadata(&path).map_err(|_| ParamError::new(ParamErrorKind::Missing, p.id, &shown))?;
        if !meta.is_file() {
            return Err(ParamError::new(ParamErrorKind::Io, p.id, &shown));
        }
        let mut f = fs::File::open(&path).map_err(|_| ParamError::new(ParamErrorKind::Missing, p.id, &shown))?;
        let meta = f.metadata().map_err(|_| ParamError::new(ParamErrorKind::Io, p.id, &shown))?;
        if !meta.is_file() || meta.len() != p.bytes as u64 {
            return Err(ParamError::size(p.bytes, usize::try_from(meta.len()).unwrap_or(usize::MAX), p.id, &shown));
        }
        f.read_exact(buf).map_err(|_| ParamError::new(ParamErrorKind::Io, p.id, &shown))
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        match self.config.get(p.id) {
            Some(file) => Message::tail(&self.dir.join(file).display().to_string()),
            None => Message::new(p.id),
        }
    }
}

/// A packed archive on disk (`cargo mlf pack` output), read into memory once; members are
/// ranges of that one buffer.
#[derive(Debug)]
pub struct PackedArchive {
    path: PathBuf,
    data: Vec<u8>,
    members: HashMap<Vec<u8>, core::ops::Range<usize>>,
    config: HashMap<String, String>,
}

impl PackedArchive {
    /// Opens the archive at `path` (a regular file of at most `MAX_ARCHIVE_BYTES`) and reads
    /// its `configure.json`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ParamError> {
        let path = path.as_ref().to_path_buf();
        let data = read_regular(&path, MAX_ARCHIVE_BYTES, ParamErrorKind::Missing, "")?;
        Self::from_bytes(path, data)
    }

    /// The archive in `data` (`path` names it in messages). It is read by the same code as
    /// [`FlashArchive`](super::FlashArchive) reads it on a device, with the same rule: every
    /// header checked, no extension headers, no member twice.
    pub fn from_bytes(path: impl Into<PathBuf>, data: Vec<u8>) -> Result<Self, ParamError> {
        let path = path.into();
        let shown = path.display().to_string();
        let mut members = HashMap::new();
        for entry in mlf_pack::tar::entries(&data) {
            let entry = entry.map_err(|e| ParamError::new(super::pack::kind_of(e), "", &shown))?;
            if !entry.is_file {
                continue; // directories are not members
            }
            // Names are read by the device's name rule and compared as bytes, as it compares them.
            let name: Vec<u8> = entry.name.bytes().collect();
            let start = entry.data_at();
            if members.insert(name.clone(), start..start + entry.data.len()).is_some() {
                let name = String::from_utf8_lossy(&name);
                return Err(ParamError::new(ParamErrorKind::Duplicate, "", &format!("{shown}: {name}")));
            }
        }
        let cfg = members
            .get(&b"configure.json"[..])
            .ok_or_else(|| ParamError::new(ParamErrorKind::ConfigMissing, "", &format!("{shown}: configure.json")))?;
        let config = parse_config(&data[cfg.clone()], &format!("{shown}: configure.json"))?;
        Ok(PackedArchive { path, data, members, config })
    }
}

impl ParamSource for PackedArchive {
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        let shown = self.path.display().to_string();
        let file = self
            .config
            .get(p.id)
            .ok_or_else(|| ParamError::new(ParamErrorKind::UnknownId, p.id, &format!("{shown}: configure.json")))?;
        let range = self
            .members
            .get(file.as_bytes())
            .ok_or_else(|| ParamError::new(ParamErrorKind::Missing, p.id, &format!("{shown}: {file}")))?;
        let data = &self.data[range.clone()];
        if data.len() != p.bytes {
            return Err(ParamError::size(p.bytes, data.len(), p.id, &format!("{shown}: {file}")));
        }
        buf.copy_from_slice(data);
        Ok(())
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        let file = self.config.get(p.id).map(String::as_str).unwrap_or(p.id);
        Message::tail(&format!("{}: {file}", self.path.display()))
    }
}
