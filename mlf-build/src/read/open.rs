//! Opening any model file: its kind detected, then its reader.

use std::path::Path;

use super::{blob, detect, kmodel, mlf, relax};
use crate::error::{Error, Result};
use crate::model::ModelDesc;

pub use super::mlf::ReadOptions;

/// Reads the model at `path` (an MLF `.tar`, an extracted MLF directory, a Relax export's `.tar`
/// or `.tar.gz`, or a kmodel).
pub fn open(path: &Path, opts: &ReadOptions) -> Result<ModelDesc> {
    open_detected(path, detect::detect_loaded(path)?, opts)
}

/// [`open`] for a path already detected (the tar detection read is not read again).
pub fn open_detected(path: &Path, detected: detect::Detected, opts: &ReadOptions) -> Result<ModelDesc> {
    match detected.kind {
        detect::FileKind::Mlf => match archive_in_folder(path) {
            Some(e) => Err(e),
            None => mlf::read(&detected.into_archive(path)?, opts),
        },
        detect::FileKind::Kmodel => kmodel::read(path),
        detect::FileKind::TvmModule => relax_export(path, detected),
        other => Err(Error::unsupported(format!(
            "this is a {} file, not a model that can be built (use `cargo mlf inspect` to see what it holds)",
            match other {
                detect::FileKind::Params => "TVM parameter",
                _ => "parameter pack",
            }
        ))
        .in_file(path)),
    }
}

/// A TVM export: a Relax export (a tar of its kernels and blob) is read; any other is refused
/// with what it is.
fn relax_export(path: &Path, detected: detect::Detected) -> Result<ModelDesc> {
    if let Some(archive) = &detected.archive {
        let scan = blob::source::scan_detected(path, &detected)?;
        if let Some(desc) = relax::desc::read(path, &scan, archive)? {
            return Ok(desc);
        }
    }
    Err(export_refusal(path, &detected))
}

/// The refusal `mlf_build::open` gives for a TVM export: names the ABI generation (tvm-ffi code,
/// TVM ≥ 0.21, can never be built) and what to export instead.
fn export_refusal(path: &Path, detected: &detect::Detected) -> Error {
    let scan = blob::source::scan_detected(path, detected);
    if let Some(Ok(Some(payload))) = scan.as_ref().ok().map(relax::payload_of) {
        return relax::refusal(&payload).in_file(path);
    }
    let abi = scan.map(|s| s.abi.generation).unwrap_or(blob::abi::Generation::Unknown);
    let msg = match abi {
        blob::abi::Generation::TvmFfi => format!(
            "this TVM export was {}; use `cargo mlf inspect` to see what it holds",
            blob::abi::TVM_FFI_REFUSAL
        ),
        _ => "this is a TVM module export (export_library), not a model mlf can build: export a Model Library Format archive \
              (tvm.micro.export_model_library_format, TVM ≤ 0.18) instead; use `cargo mlf inspect` to see what it holds"
            .to_string(),
    };
    Error::unsupported(msg).in_file(path)
}

/// For a folder without `metadata.json` that holds model files (`model.tar`…): the error naming
/// them, as the user likely meant one of them. `None` otherwise (the MLF reader says what is
/// missing).
fn archive_in_folder(dir: &Path) -> Option<Error> {
    if !dir.is_dir() || dir.join("metadata.json").exists() {
        return None;
    }
    let mut models: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .take(10_000)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| [".tar", ".kmodel", ".tar.gz"].iter().any(|x| n.ends_with(x)))
        .collect();
    models.sort();
    let first = models.first()?;
    let hint = format!("it holds {}: did you mean {}?", models.join(", "), dir.join(first).display());
    Some(Error::missing(format!("metadata.json: this folder is not an extracted MLF archive; {hint}")).in_file(dir))
}
