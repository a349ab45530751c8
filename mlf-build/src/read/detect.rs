//! Recognises what a file is from its content (not its extension, except as a tie-breaker).

use std::io::Read;
use std::path::Path;

use crate::error::{Context, Error, ErrorKind, Result};
use crate::read::archive::Archive;

/// What a path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A TVM Model Library Format archive (tar) or extracted directory.
    Mlf,
    /// A Kendryte kmodel (any version; unsupported versions are refused by the reader).
    Kmodel,
    /// A TVM export carrying a module serialization blob: ELF shared or relocatable object,
    /// `devc.c`-style C source, raw blob, or a `.tar` export holding such files.
    TvmModule,
    /// A TVM parameter file (`.params`).
    Params,
    /// An mlf external-parameter pack (`cargo mlf pack` output) or split folder.
    ParamPack,
}

/// What a path holds, with the tar archive detection had to read to decide, so that callers
/// need not read it again.
#[derive(Debug)]
pub struct Detected {
    /// What the path holds.
    pub kind: FileKind,
    /// The tar archive read to classify a tar file (a `.tar.gz` export's decompressed tar);
    /// `None` for directories and other files.
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
    let meta = std::fs::metadata(path).map_err(Error::from).in_file(path)?;
    if meta.is_dir() {
        if path.join("configure.json").is_file() {
            return found(FileKind::ParamPack);
        }
        return found(FileKind::Mlf);
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head)).map_err(Error::from).in_file(path)?;
    if crate::read::archive::is_gzip(&head) {
        if let Some(archive) = gzipped_export(path) {
            return Ok(Detected { kind: FileKind::TvmModule, archive: Some(archive), gzipped: true });
        }
    }
    let kind = detect_bytes(&head, path.extension().and_then(|e| e.to_str()).unwrap_or(""))
        .ok_or_else(|| unknown(&head).in_file(path))?;
    if kind == FileKind::Mlf {
        // A tar: what it holds decides.
        let archive = Archive::open(path)?;
        return Ok(Detected { kind: tar_kind(&archive), archive: Some(archive), gzipped: false });
    }
    found(kind)
}

/// A gzip file is a TVM export when it holds a tar that [`tar_kind`] calls one (TVM's
/// `export_library("x.tar")` compresses): its decompressed tar. Anything else is left to the
/// readers, which refuse gzip.
fn gzipped_export(path: &Path) -> Option<Archive> {
    use crate::read::archive::{MAX_ARCHIVE_BYTES, gunzip, read_limited};
    let data = read_limited(path, "file").ok()?;
    let tar = gunzip(&data, MAX_ARCHIVE_BYTES).ok()?;
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

fn unknown(head: &[u8]) -> Error {
    let first: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Error::new(ErrorKind::UnknownFormat(format!(
        "not an MLF archive, kmodel, TVM export or parameter file (first bytes: {})",
        if first.is_empty() { "none, the file is empty".to_string() } else { first.join(" ") }
    )))
}

/// Detects the kind from the first bytes (up to 4 KiB) and the file extension.
pub fn detect_bytes(head: &[u8], ext: &str) -> Option<FileKind> {
    let u32_at = |o: usize| head.get(o..o + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |o: usize| head.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    if head.starts_with(b"\x7fELF") {
        return Some(FileKind::TvmModule);
    }
    if head.starts_with(b"LDMK") {
        return Some(FileKind::Kmodel);
    }
    if u64_at(0) == Some(crate::read::params::LIST_MAGIC) {
        return Some(FileKind::Params);
    }
    if crate::read::archive::is_tar(head) {
        // A tar: what it holds decides. Look at member names in the first blocks we have; the
        // archive reader confirms later.
        return Some(FileKind::Mlf);
    }
    let first = u32_at(0);
    if ext == "kmodel"
        || matches!(first, Some(3) if u32_at(8) == Some(0))
        || matches!(first, Some(1) if ext != "bin")
        || first == Some(0x1234_5678)
    {
        return Some(FileKind::Kmodel);
    }
    if let Ok(text) = std::str::from_utf8(&head[..head.len().min(4096)]) {
        if text.contains("__tvm_dev_mblob") || text.contains("library_bin") || ext == "c" || ext == "cc" {
            return Some(FileKind::TvmModule);
        }
    }
    if ext == "bin" || ext == "blob" {
        return Some(FileKind::TvmModule);
    }
    None
}
