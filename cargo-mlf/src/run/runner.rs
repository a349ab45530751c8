//! The runner crate `cargo mlf run` builds for a model: its `Cargo.toml` (from
//! `templates/run`), its generated `build.rs` and `main.rs`, and the cargo build of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_build::__private::Layout;
use mlf_build::{Error, ModelDesc, ModelFormat, Placement};

use super::code;
use crate::template;

/// A built runner: its executable and, for external parameters, the split its build step wrote.
pub struct Runner {
    /// The executable.
    pub exe: PathBuf,
    /// The split folder the build step wrote (external parameters).
    pub split_dir: Option<PathBuf>,
}

/// Writes the runner crate for `desc` (the model at `model`, MLF module `module`, parameters in
/// `placement`) under `work` and builds it.
pub fn build_runner(
    desc: &ModelDesc,
    model: &Path,
    module: Option<&str>,
    work: &Path,
    placement: Placement,
    release: bool,
) -> Result<Runner, Error> {
    // One crate per model, module and placement, named like the model's build output.
    let key = Layout::new(Path::new(""), "mlf-run", model, module, placement).key().to_string();
    let crate_name = format!("mlf-run-{}", key.to_ascii_lowercase().replace('_', "-"));
    let dir = work.join(&key);
    let is_kmodel = matches!(desc.format, ModelFormat::Kmodel { .. });
    if is_kmodel && placement.is_external() {
        return Err(Error::invalid("a kmodel's weights are part of the kmodel file: only --params embedded applies"));
    }
    let split_dir = placement.is_external().then(|| dir.join("split"));
    let (runtime_dep, build_dep) = deps();
    let vars = [("crate_name", crate_name.clone()), ("runtime_dep", runtime_dep), ("build_dep", build_dep)];
    template::render_dir(&template::RUN, &dir, &vars)?;
    let build_rs = code::build_rs(model, is_kmodel, module, placement, split_dir.as_deref())?;
    mlf_build::__private::write_if_changed(&dir.join("build.rs"), build_rs.as_bytes())?;
    let main_rs = code::main_rs(desc, model, placement)?;
    mlf_build::__private::write_if_changed(&dir.join("src/main.rs"), main_rs.as_bytes())?;
    let target_dir = work.join("target");
    cargo_build(&dir, &target_dir, model, release)?;
    Ok(Runner {
        exe: target_dir
            .join(if release { "release" } else { "debug" })
            .join(format!("{crate_name}{}", std::env::consts::EXE_SUFFIX)),
        split_dir,
    })
}

/// Builds the runner crate in `dir` with cargo, into `target_dir`.
fn cargo_build(dir: &Path, target_dir: &Path, model: &Path, release: bool) -> Result<(), Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building {} with cargo (crate {})", model.display(), dir.display());
    let mut build = Command::new(&cargo);
    build
        .arg("build")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    if release {
        build.arg("--release");
    }
    let status = build.status().map_err(|e| Error::invalid(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(Error::invalid(format!("building the generated crate failed ({status}); see the messages above"))
            .in_file(model));
    }
    Ok(())
}

/// Dependency specs for mlf-runtime (with `std`) and mlf-build: this source tree when it is
/// present (a checkout), else the published crates.
pub fn deps() -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf);
    crate::template::deps(true, root.filter(|r| r.join("mlf-runtime/Cargo.toml").is_file()).as_deref())
}
