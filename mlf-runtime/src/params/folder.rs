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

/// Parses `configure.json`: identifier → relative file path (each entry must record its size;
/// the size checked is the generated code's).
fn parse_config(text: &[u8], origin: &str) -> Result<HashMap<String, String>, ParamError> {
    let bad = || ParamError::new(ParamErrorKind::ConfigMalformed, "", origin);
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
        let text = fs::read(&cfg).map_err(|_| ParamError::new(ParamErrorKind::ConfigMissing, "", &origin))?;
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
        let mut f = fs::File::open(&path).map_err(|_| ParamError::new(ParamErrorKind::Missing, p.id, &shown))?;
        let len = f.metadata().map_err(|_| ParamError::new(ParamErrorKind::Io, p.id, &shown))?.len() as usize;
        if len != p.bytes {
            return Err(ParamError::size(p.bytes, len, p.id, &shown));
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
    members: HashMap<String, core::ops::Range<usize>>,
    config: HashMap<String, String>,
}

impl PackedArchive {
    /// Opens the archive at `path` and reads its `configure.json`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ParamError> {
        let path = path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        let data = fs::read(&path).map_err(|_| ParamError::new(ParamErrorKind::Missing, "", &shown))?;
        let mut members = HashMap::new();
        let mut archive = ::tar::Archive::new(&data[..]);
        let entries = archive.entries().map_err(|_| ParamError::new(ParamErrorKind::ArchiveTruncated, "", &shown))?;
        for entry in entries {
            let entry = entry.map_err(|_| ParamError::new(ParamErrorKind::ArchiveTruncated, "", &shown))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry
                .path()
                .map_err(|_| ParamError::new(ParamErrorKind::ArchiveTruncated, "", &shown))?
                .to_string_lossy()
                .trim_start_matches("./")
                .to_string();
            let start = entry.raw_file_position() as usize;
            let end = start.checked_add(entry.size() as usize).filter(|&e| e <= data.len());
            let end =
                end.ok_or_else(|| ParamError::new(ParamErrorKind::ArchiveTruncated, "", &format!("{shown}: {name}")))?;
            members.insert(name, start..end);
        }
        let cfg = members
            .get("configure.json")
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
            .get(file.as_str())
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
