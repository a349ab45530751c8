//! The layout of the build's output folder (`OUT_DIR/mlf/`): the name each model's files go
//! under, and the side file that tells `include_model!` what was built.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::Placement;
use crate::read::archive::Archive;
use crate::support::hash::{FNV_OFFSET, fnv1a};
use crate::support::names;

/// The sidecar `include_model!` reads next to a generated module.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Sidecar {
    /// Default module name.
    pub module: String,
    /// Fingerprint of the model file when the module was generated.
    pub fingerprint: String,
    /// One-line description for the module's documentation.
    pub summary: String,
}

/// The name under which a model's generated files live in `OUT_DIR/mlf/`: the file stem (and
/// module) and a hash of the package name, the model's canonical path and the module name.
/// `include_model!` computes the same.
pub fn model_key(pkg: &str, canonical: &Path, module: Option<&str>) -> String {
    let stem = canonical.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let mut h = fnv1a(FNV_OFFSET, pkg.as_bytes());
    h = fnv1a(h, canonical.to_string_lossy().as_bytes());
    let mut name = names::sanitize(stem);
    if let Some(m) = module {
        h = fnv1a(h, m.as_bytes());
        name = format!("{name}-{}", names::sanitize(m));
    }
    format!("{name}-{h:016x}")
}

/// The name of the generated files of a model (named `base` by [`model_key`]) built with
/// parameters in `placement`: `base` (embedded), `base-resident`, `base-streamed`.
pub fn placement_key(base: &str, placement: Placement) -> String {
    match placement {
        Placement::Embedded => base.to_string(),
        p => format!("{base}-{}", p.name()),
    }
}

/// A fingerprint of a model file or directory's bytes (to detect stale generated code).
pub fn fingerprint(path: &Path) -> Result<String> {
    let mut h = FNV_OFFSET;
    if path.is_dir() {
        let archive = Archive::open(path)?;
        for name in archive.names() {
            h = fnv1a(h, name.as_bytes());
            h = fnv1a(h, archive.get(name).map(|b| b.as_slice()).unwrap_or_default());
        }
    } else {
        let data = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
        h = fnv1a(h, &data);
    }
    Ok(format!("{h:016x}"))
}
