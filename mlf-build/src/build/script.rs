//! The build-script entry points: [`Model::compile`] reads cargo's environment, builds, and
//! enforces the budgets of `[package.metadata.mlf]`; [`compile_listed`] builds every model that
//! table lists.

use std::path::{Path, PathBuf};

use super::budget::{check_crate, check_model};
use super::compile::write_if_changed;
use super::layout::Layout;
use super::manifest::{Manifest, ModelEntry, ModuleNames, TABLE};
use super::model::{Built, Model};
use crate::error::{Error, Result};
use crate::plan::report::MemoryReport;
use crate::read::detect::{FileKind, detect};

impl Model {
    /// Builds the model inside a build script: reads it, plans its memory, compiles its C for
    /// `$TARGET`, and writes the Rust module and parameter files into `$OUT_DIR/mlf/`.
    ///
    /// When the crate's `Cargo.toml` has a `[package.metadata.mlf]` table (see
    /// [`super::manifest`]) that lists this model, its budgets are checked here: a model over
    /// its `ram`/`flash` budget, or the crate's models together over the crate's, fail the build
    /// with an error naming the model, the need and the budget.
    pub fn compile(self) -> Result<Built> {
        let env = |k: &str| {
            std::env::var(k)
                .map_err(|_| Error::invalid(format!("${k} is not set: Model::compile() runs inside a build script")))
        };
        let out_dir = PathBuf::from(env("OUT_DIR")?);
        let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let pkg = env("CARGO_PKG_NAME")?;
        let target = env("TARGET")?;
        let host = env("HOST").unwrap_or_else(|_| target.clone());
        let path = if self.path.is_absolute() { self.path.clone() } else { manifest_dir.join(&self.path) };
        println!("cargo::rerun-if-changed={}", path.display());
        let mut model = self;
        model.libs = model.libs.resolved(&manifest_dir);
        // mlf-runtime's `profile` feature reaches this script as its `links` metadata.
        println!("cargo::rerun-if-env-changed={}", super::model::PROFILE_ENV);
        if model.profile.is_none() {
            model.profile = Some(std::env::var(super::model::PROFILE_ENV).is_ok_and(|v| v == "1"));
        }
        for p in model.libs.include_dirs.iter().chain(&model.libs.sources) {
            println!("cargo::rerun-if-changed={}", p.display());
        }
        let built = model.build_into(&path, &out_dir, &pkg, &target, &host, true)?;
        // Budgets from `[package.metadata.mlf]` in the crate's Cargo.toml (see `manifest`).
        enforce_in_build_script(&manifest_dir, &out_dir, &pkg, model.module.as_deref(), &built)?;
        Ok(built)
    }

    /// [`Model::compile`] for a build script that has nothing to do on an error but stop: the
    /// error is reported through [`crate::report_error`] (cargo's `cargo::error=`, no panic, no
    /// backtrace) and the script ends.
    pub fn compile_or_exit(self) -> Built {
        self.compile().unwrap_or_else(|e| crate::report_error(e))
    }
}

/// [`compile_listed`] for a build script that has nothing to do on an error but stop (see
/// [`Model::compile_or_exit`]).
pub fn compile_listed_or_exit() -> Vec<Built> {
    compile_listed().unwrap_or_else(|e| crate::report_error(e))
}

/// The budget hook of [`Model::compile`]: when the crate's `Cargo.toml` has a
/// `[package.metadata.mlf]` table, writes the model's report beside its generated module, checks
/// the model against its entry's budget (when the table lists it), and checks the crate's budget
/// and the board's limits against the models of the table built so far.
pub fn enforce_in_build_script(
    manifest_dir: &Path,
    out_dir: &Path,
    pkg: &str,
    mlf_module: Option<&str>,
    built: &Built,
) -> Result<()> {
    let cargo_toml = manifest_dir.join("Cargo.toml");
    if !cargo_toml.is_file() {
        return Ok(());
    }
    println!("cargo::rerun-if-changed={}", cargo_toml.display());
    let Some(manifest) = Manifest::read(&cargo_toml)? else { return Ok(()) };
    let report = built.report()?;
    let json = serde_json::to_string_pretty(&report).map_err(|e| Error::invalid(e.to_string()))?;
    write_if_changed(&built.report_file(), json.as_bytes())?;
    println!("mlf memory report:\n{report}");
    if let Some((i, entry)) = manifest.entry_for(manifest_dir, &built.model, mlf_module) {
        check_model(&report, &entry.budget(i, &cargo_toml))?;
    }
    let (crate_budget, board) = (manifest.crate_budget(&cargo_toml), manifest.board_budget(&cargo_toml));
    if crate_budget.is_empty() && board.is_empty() {
        return Ok(());
    }
    let mut reports = Vec::new();
    for e in &manifest.models {
        let path = manifest_dir.join(&e.path);
        let Ok(canonical) = path.canonicalize() else { continue };
        let layout = Layout::new(out_dir, pkg, &canonical, e.module.as_deref(), e.placement());
        if let Ok(bytes) = std::fs::read(layout.report_file()) {
            if let Ok(r) = serde_json::from_slice::<MemoryReport>(&bytes) {
                reports.push(r);
            }
        }
    }
    check_crate(pkg, &reports, &crate_budget)?;
    // The whole firmware must fit the board (measured after linking by `cargo mlf build`); the
    // models alone must fit it already.
    check_crate(pkg, &reports, &board)
}

/// Builds every model listed in the crate's `[package.metadata.mlf]` table, from a build script:
/// each entry as [`Model::compile`] would with the entry's `module`, `name` and `params`,
/// checking the models' and the crate's budgets. Kmodels need no build step and are skipped.
///
/// ```no_run
/// // build.rs
/// fn main() {
///     mlf_build::compile_listed_or_exit();
/// }
/// ```
pub fn compile_listed() -> Result<Vec<Built>> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .ok_or_else(|| Error::invalid("$CARGO_MANIFEST_DIR is not set: compile_listed() runs inside a build script"))?;
    let cargo_toml = dir.join("Cargo.toml");
    println!("cargo::rerun-if-changed={}", cargo_toml.display());
    let manifest = Manifest::read(&cargo_toml)?
        .ok_or_else(|| Error::missing(format!("[{TABLE}] table listing the crate's models")).in_file(&cargo_toml))?;
    let mut built = Vec::new();
    // Two entries generating one module are refused, naming both.
    let mut names = ModuleNames::default();
    for (i, entry) in manifest.models.iter().enumerate() {
        let path = dir.join(&entry.path);
        println!("cargo::rerun-if-changed={}", path.display());
        let kind = detect(&path).map_err(|e| e.at(format!("{TABLE}.models[{i}].path")).in_file(&cargo_toml))?;
        if kind == FileKind::Kmodel {
            if let Some(name) = entry.known_module_name() {
                names.claim(&manifest, i, &name).map_err(|e| e.in_file(&cargo_toml))?;
            }
            continue;
        }
        if entry.kpu.is_some() {
            let e = Error::invalid("`kpu` chooses where a kmodel's KPU layers run; this is a TVM model");
            return Err(e.at(format!("{TABLE}.models[{i}].kpu")).in_file(&cargo_toml));
        }
        let one =
            entry.to_model(&dir).map_err(|e| e.at(format!("{TABLE}.models[{i}]")).in_file(&cargo_toml))?.compile()?;
        names.claim(&manifest, i, &one.module).map_err(|e| e.in_file(&cargo_toml))?;
        built.push(one);
    }
    Ok(built)
}

impl ModelEntry {
    /// The entry as a configured [`Model`] (path resolved against `crate_dir`).
    pub fn to_model(&self, crate_dir: &Path) -> Result<Model> {
        let mut m = Model::open(crate_dir.join(&self.path))
            .params(self.placement())
            .fp_contract(self.fp_contract.unwrap_or(false))
            .in_place(self.in_place.unwrap_or(true));
        if let Some(limit) = self.max_static {
            m = m.max_static_bytes(limit.bytes());
        }
        if let Some(key) = &self.pack_key {
            m = m.pack_key(crate_dir.join(key));
        }
        if let Some(module) = &self.module {
            m = m.module(module.clone());
        }
        if let Some(name) = &self.name {
            m = m.name(name.clone());
        }
        if let Some(arena) = &self.arena {
            m = m.shared_arena(arena.clone());
        }
        if let Some(s) = &self.arena_section {
            m = m.arena_section(s.clone());
        }
        if let Some(s) = &self.params_section {
            m = m.params_section(s.clone());
        }
        let libs = self.libraries(crate_dir);
        for d in libs.include_dirs {
            m = m.include_dir(d);
        }
        for s in libs.sources {
            m = m.c_source(s);
        }
        for l in libs.libraries {
            m = m.link_library(l);
        }
        Ok(m)
    }
}
