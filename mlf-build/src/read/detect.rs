//! Recognises what a file is from its content (not its extension, except as a tie-breaker), and
//! for a tar archive, from the members it holds.

use std::path::Path;

use super::sniff::{head, is_gzip, sniff};
use crate::error::{Context, Error, ErrorKind, Result};
use crate::read::archive::{Archive, read_limited};
use crate::read::param_pack::read_pack;

pub use super::sniff::FileKind;

/// What a path holds, with the tar archive detection had to read to decide, so that callers
/// need not read it again.
#[derive(Debug)]
pub struct Detected {
    /// What the path holds.
    pub kind: FileKind,
    /// The tar archive read to classify a tar file (a `.tar.gz` export's decompressed tar), or
    /// the folder an export was extracted to (`devc.c` or `devc.o` in it); `None` for other
    /// directories and files.
    pub archive: Option<Archive>,
    /// Whether the file is gzip-compressed (`archive` is then its decompressed tar).
    pub gzipped: bool,
}

impl Detected {
    /// The archive detection read, else the file or directory read now.
    pub fn into_archive(self, path: &Path) -> Result<Archive> {
        match self.archive {
            Some(a) => Ok(a),
            None => Archive::open(path),
        }
    }
}

/// Detects the kind of `path`.
pub fn detect(path: &Path) -> Result<FileKind> {
    detect_loaded(path).map(|d| d.kind)
}

/// Detects the kind of `path`, keeping the archive a tar file was read into.
pub fn detect_loaded(path: &Path) -> Result<Detected> {
    let found = |kind| Ok(Detected { kind, archive: None, gzipped: false });
    let is_dir = std::fs::metadata(path).map_err(Error::from).in_file(path)?.is_dir();
    if !is_dir && is_gzip(&head(path)?) {
        if let Some(archive) = gzipped_export(path) {
            return Ok(Detected { kind: FileKind::TvmModule, archive: Some(archive), gzipped: true });
        }
    }
    if is_dir && !path.join("metadata.json").exists() && ["devc.c", "devc.o"].iter().any(|f| path.join(f).is_file()) {
        // An `export_library` tar extracted to a folder: read as the tar would be.
        let archive = Archive::open(path)?;
        if tar_kind(&archive) == FileKind::TvmModule {
            return Ok(Detected { kind: FileKind::TvmModule, archive: Some(archive), gzipped: false });
        }
    }
    let kind = sniff(path)?;
    if kind == FileKind::Mlf && !is_dir {
        // A tar: what it holds decides. A parameter pack is then read again by the pack rule,
        // which the device's reader applies (no extension headers: the tar crate applies PAX
        // renames, the device does not).
        let bytes = read_limited(path, "archive")?;
        let archive = Archive::from_tar_bytes(path, bytes.clone())?;
        let kind = tar_kind(&archive);
        let archive = if kind == FileKind::ParamPack { read_pack(path, bytes)? } else { archive };
        return Ok(Detected { kind, archive: Some(archive), gzipped: false });
    }
    found(kind)
}

/// A gzip file is a TVM export when it holds a tar that [`tar_kind`] calls one (TVM's
/// `export_library("x.tar")` compresses): its decompressed tar. Anything else is left to the
/// readers, which refuse gzip.
fn gzipped_export(path: &Path) -> Option<Archive> {
    let data = read_limited(path, "file").ok()?;
    let tar = gunzip(&data, MAX_GUNZIP_BYTES).ok()?;
    let archive = Archive::from_tar_bytes(path, crate::support::bytes::Bytes::new(tar)).ok()?;
    (tar_kind(&archive) == FileKind::TvmModule).then_some(archive)
}

/// Classifies a tar by its members: `metadata.json` → MLF, `configure.json` → parameter pack,
/// shared objects / objects / `devc.c` → TVM export. Anything else is read as an MLF, whose
/// reader then says what is missing.
pub fn tar_kind(archive: &Archive) -> FileKind {
    let has = |n: &str| archive.get(n).is_some();
    if has("metadata.json") {
        FileKind::Mlf
    } else if has("configure.json") {
        FileKind::ParamPack
    } else if archive.names().any(|n| n.ends_with(".so") || n.ends_with("devc.c") || n.ends_with("devc.o"))
        || (archive.names().any(|n| n.ends_with(".o") || n.ends_with(".c"))
            && !archive.names().any(|n| n.starts_with("codegen/")))
    {
        FileKind::TvmModule
    } else {
        FileKind::Mlf
    }
}

/// Largest decompressed TVM export read (256 MiB): a gzip file can expand a thousandfold, so
/// the limit is checked while decompressing, never after.
pub const MAX_GUNZIP_BYTES: u64 = 256 << 20;

/// Decompresses gzip data, refusing output larger than `limit` bytes (decompression stops one
/// byte past it).
pub fn gunzip(data: &[u8], limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::new(ErrorKind::CorruptTar(format!("gzip: {e}"))))?;
    if out.len() as u64 > limit {
        return Err(Error::new(ErrorKind::TooLarge {
            what: "decompressed export".into(),
            size: out.len() as u64,
            limit,
        }));
    }
    Ok(out)
}
