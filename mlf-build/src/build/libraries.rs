//! Code the user supplies for a model: include folders, C sources and prebuilt static libraries
//! of the vendor libraries BYOC-generated C calls into (CMSIS-NN, esp-dl, …). Given per model
//! with [`crate::Model::include_dir`], [`crate::Model::c_source`] and
//! [`crate::Model::link_library`], the `include_dirs`, `c_sources` and `libraries` keys of a
//! `[package.metadata.mlf]` entry, or `cargo mlf run --include-dir/--c-source/--library`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What the user supplies to build a model's C.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserLibraries {
    /// Folders searched for the C's `#include`s (after the archive's and mlf's own).
    pub include_dirs: Vec<PathBuf>,
    /// C files compiled with the model (a folder stands for every `.c` file under it).
    pub sources: Vec<PathBuf>,
    /// Prebuilt static libraries linked with the model (`libcmsis-nn.a`).
    pub libraries: Vec<PathBuf>,
    /// True when the user adjusted the compiler itself (`Model::configure_cc`): headers may then
    /// come from include paths mlf does not see, so only the compiler can say they are missing.
    pub compiler_configured: bool,
}

impl UserLibraries {
    /// True when nothing is supplied.
    pub fn is_empty(&self) -> bool {
        self.include_dirs.is_empty() && self.sources.is_empty() && self.libraries.is_empty()
    }

    /// The folder of `include_dirs` that has `header` (a path as written in `#include`).
    pub fn find_header(&self, header: &str) -> Option<&Path> {
        self.include_dirs.iter().map(PathBuf::as_path).find(|d| d.join(header).is_file())
    }

    /// Every path resolved against `base` (relative paths are relative to it).
    pub fn resolved(&self, base: &Path) -> UserLibraries {
        let abs = |v: &[PathBuf]| v.iter().map(|p| base.join(p)).collect();
        UserLibraries {
            include_dirs: abs(&self.include_dirs),
            sources: abs(&self.sources),
            libraries: abs(&self.libraries),
            compiler_configured: self.compiler_configured,
        }
    }

    /// The C files to compile: every source given, folders expanded to the `.c` files under
    /// them (sorted, so builds are reproducible). An error names a path that does not exist.
    pub fn source_files(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for s in &self.sources {
            if s.is_dir() {
                let mut found = Vec::new();
                collect_c_files(s, &mut found, 0)?;
                found.sort();
                out.extend(found);
            } else if s.is_file() {
                out.push(s.clone());
            } else {
                return Err(Error::missing(format!("C source {}: no such file or folder", s.display())));
            }
        }
        Ok(out)
    }

    /// Checks that every include folder and library exists.
    pub fn check_paths(&self) -> Result<()> {
        for d in &self.include_dirs {
            if !d.is_dir() {
                return Err(Error::missing(format!("include folder {}: no such folder", d.display())));
            }
        }
        for l in &self.libraries {
            if !l.is_file() {
                return Err(Error::missing(format!("library {}: no such file", l.display())));
            }
            library_name(l)?;
        }
        Ok(())
    }
}

/// How deep folders of C sources are searched.
const MAX_SOURCE_DEPTH: usize = 16;

fn collect_c_files(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<()> {
    if depth > MAX_SOURCE_DEPTH {
        return Err(Error::invalid(format!(
            "C sources under {}: folders nested deeper than {MAX_SOURCE_DEPTH} levels",
            dir.display()
        )));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir))?;
    for e in entries {
        let e = e.map_err(|e| Error::from(e).in_file(dir))?;
        let ty = e.file_type().map_err(|e| Error::from(e).in_file(dir))?;
        let p = e.path();
        if ty.is_dir() {
            collect_c_files(&p, out, depth + 1)?;
        } else if ty.is_file() && p.extension().is_some_and(|x| x == "c") {
            out.push(p);
        }
    }
    Ok(())
}

/// The name rustc links a static library by: `libcmsis-nn.a` → `cmsis-nn`.
pub fn library_name(path: &Path) -> Result<String> {
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
    file.strip_prefix("lib")
        .and_then(|f| f.strip_suffix(".a"))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::invalid(format!("library {}: expected a static library named lib<name>.a", path.display()))
        })
}
