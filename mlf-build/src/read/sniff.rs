//! Recognises what a file is from its first bytes (and its extension, as a tie-breaker),
//! without reading the rest: enough for `include_model!` to tell a kmodel from a TVM model, and
//! the first step of [`detect`](super::detect), which looks inside tar archives.

use std::path::Path;

use crate::error::{Context, Error, ErrorKind, Result};

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

/// What `path` holds, judged from its first 4 KiB: a directory is an MLF (a parameter pack when
/// it has a `configure.json`), and a tar file counts as an MLF until its members are read.
pub fn sniff(path: &Path) -> Result<FileKind> {
    let meta = std::fs::metadata(path).map_err(Error::from).in_file(path)?;
    if meta.is_dir() {
        let pack = path.join("configure.json").is_file();
        return Ok(if pack { FileKind::ParamPack } else { FileKind::Mlf });
    }
    let head = head(path)?;
    detect_bytes(&head, path.extension().and_then(|e| e.to_str()).unwrap_or(""))
        .ok_or_else(|| unknown(&head, path.extension().and_then(|e| e.to_str()).unwrap_or("")).in_file(path))
}

/// The first 4 KiB of a file.
pub(super) fn head(path: &Path) -> Result<Vec<u8>> {
    // A FIFO or a device is refused before it is opened (opening a FIFO blocks).
    crate::support::files::read_head(path, 4096)
}

/// How to get an MLF archive from a model a framework wrote (TVM releases before 0.19 write MLF).
const COMPILE_WITH_TVM: &str = "compile it with Apache TVM (0.8 to 0.18; microTVM and MLF export were removed in \
     0.19) into a Model Library Format archive and pass that: `tvmc compile MODEL --target c --runtime crt \
     --executor aot --output-format mlf --output model.tar`";

/// The error for a file of no kind mlf knows: what it is when mlf can tell (a TensorFlow Lite
/// or ONNX model, gzip) and what to do, else its first bytes.
pub(super) fn unknown(head: &[u8], ext: &str) -> Error {
    let ext = ext.to_ascii_lowercase();
    let what = if head.get(4..8) == Some(b"TFL3") || ext == "tflite" {
        Some(format!("a TensorFlow Lite model, not a compiled one: {COMPILE_WITH_TVM}"))
    } else if ext == "onnx" {
        Some(format!("an ONNX model, not a compiled one: {COMPILE_WITH_TVM}"))
    } else if ext == "pb" || ext == "h5" || ext == "keras" || ext == "pt" || ext == "pth" {
        Some(format!("a framework's model file (.{ext}), not a compiled one: {COMPILE_WITH_TVM}"))
    } else if is_gzip(head) {
        Some("a gzip-compressed file: decompress it first (gunzip) and pass the .tar".into())
    } else {
        None
    };
    let first: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Error::new(ErrorKind::UnknownFormat(what.unwrap_or_else(|| {
        format!(
            "not an MLF archive, kmodel, TVM export or parameter file (first bytes: {})",
            if first.is_empty() { "none, the file is empty".to_string() } else { first.join(" ") }
        )
    })))
}

/// Detects the kind from the first bytes (up to 4 KiB) and the file extension.
pub fn detect_bytes(head: &[u8], ext: &str) -> Option<FileKind> {
    let u32_at = |o: usize| head.get(o..o + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |o: usize| head.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    // A framework's model (TensorFlow Lite's "TFL3" identifier, an ONNX or TFLite extension) is
    // none of mlf's kinds, whatever its bytes look like: `unknown` says what to do with it.
    let ext_lower = ext.to_ascii_lowercase();
    if head.get(4..8) == Some(b"TFL3") || ext_lower == "tflite" || ext_lower == "onnx" {
        return None;
    }
    if head.starts_with(b"\x7fELF") {
        return Some(FileKind::TvmModule);
    }
    if head.starts_with(b"LDMK") {
        return Some(FileKind::Kmodel);
    }
    if u64_at(0) == Some(TVM_PARAMS_MAGIC) {
        return Some(FileKind::Params);
    }
    if is_tar(head) {
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

/// The magic number a TVM `.params` file starts with.
pub(crate) const TVM_PARAMS_MAGIC: u64 = 0xF7E5_8D4F_0504_9CB7;

/// Whether data is gzip-compressed (TVM's `export_library("x.tar")` gzips the tar).
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b])
}

/// Whether data starts with a ustar header (the archive reader checks the rest).
pub fn is_tar(data: &[u8]) -> bool {
    data.len() >= 512 && data.get(257..262) == Some(b"ustar")
}
