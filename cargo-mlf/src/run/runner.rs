//! The runner crate `cargo mlf run` builds for a model: its `Cargo.toml` (from
//! `templates/run`), its generated `build.rs` and `main.rs`, and the cargo build of it.

use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mlf_build::__private::{Layout, UserLibraries};
use mlf_build::{Error, ModelDesc, ModelFormat, Placement};
use proc_macro2::TokenStream;

use super::machine::Machine;
use super::{code, device_code};
use crate::template;

/// A built runner: its executable and, for external parameters, the split its build step wrote.
pub struct Runner {
    /// The executable (for a device, the ELF QEMU runs).
    pub exe: PathBuf,
    /// The split folder the build step wrote (external parameters).
    pub split_dir: Option<PathBuf>,
}

/// What to build a runner for.
pub struct Spec<'a> {
    /// The model's description.
    pub desc: &'a ModelDesc,
    /// The model file.
    pub model: &'a Path,
    /// Its MLF module.
    pub module: Option<&'a str>,
    /// The user's include folders, C sources and libraries.
    pub libs: &'a UserLibraries,
    /// Where its parameters live.
    pub placement: Placement,
    /// Cargo's release profile.
    pub release: bool,
    /// Profile each operator (device programs: `cargo mlf run --profile`).
    pub profile: bool,
    /// The emulated device, or `None` for this computer.
    pub device: Option<&'static Machine>,
}

/// Writes the runner crate for `spec` under `work` and builds it.
pub fn build_runner(spec: &Spec<'_>, work: &Path) -> Result<Runner, Error> {
    let Spec { desc, model, module, libs, placement, release, profile, device } = *spec;
    // One crate per model, module, placement and device, named like the model's build output.
    let mut key = Layout::new(Path::new(""), "mlf-run", model, module, placement).key().to_string();
    if let Some(m) = device {
        key = format!("{key}-{}", m.target);
    }
    let crate_name = format!("mlf-run-{}", key.to_ascii_lowercase().replace('_', "-"));
    let dir = work.join(&key);
    let is_kmodel = matches!(desc.format, ModelFormat::Kmodel { .. });
    if is_kmodel && placement.is_external() {
        return Err(Error::invalid("a kmodel's weights are part of the kmodel file: only --params embedded applies"));
    }
    let split_dir = placement.is_external().then(|| dir.join("split"));
    let (runtime_dep, build_dep) = if device.is_some() { runner_deps(false) } else { runner_deps(true) };
    let vars = [("crate_name", crate_name.clone()), ("runtime_dep", runtime_dep), ("build_dep", build_dep)];
    let (build_extra, main_rs) = match device {
        Some(m) => {
            template::render_dir(&template::RUN_DEVICE, &dir, &vars)?;
            let extra = device_code::build_rs_machine(m, placement.is_external());
            (extra, device_code::main_rs(desc, (model, module), placement, is_kmodel, profile)?)
        }
        None => {
            template::render_dir(&template::RUN, &dir, &vars)?;
            (TokenStream::new(), code::main_rs(desc, (model, module), placement, profile)?)
        }
    };
    let build_rs = code::build_rs(model, is_kmodel, (module, libs), placement, split_dir.as_deref(), build_extra)?;
    mlf_build::__private::write_if_changed(&dir.join("build.rs"), build_rs.as_bytes())?;
    mlf_build::__private::write_if_changed(&dir.join("src/main.rs"), main_rs.as_bytes())?;
    let target_dir = work.join("target");
    cargo_build(&dir, &target_dir, model, (release, profile), device.map(|m| m.target))?;
    let mut exe = target_dir;
    if let Some(m) = device {
        exe.push(m.target);
    }
    exe.push(if release { "release" } else { "debug" });
    exe.push(format!("{crate_name}{}", if device.is_some() { "" } else { std::env::consts::EXE_SUFFIX }));
    Ok(Runner { exe, split_dir })
}

/// Builds the runner crate in `dir` with cargo, into `target_dir`, for `target` (a device) or
/// this computer, showing progress on stderr: a spinner with cargo's current step when stderr is
/// a terminal, else one line saying what is built where.
fn cargo_build(
    dir: &Path,
    target_dir: &Path,
    model: &Path,
    (release, profile): (bool, bool),
    target: Option<&str>,
) -> Result<(), Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let first = if target_dir.exists() { "" } else { " (the first build takes about a minute)" };
    let mut build = Command::new(&cargo);
    build.arg("build").arg("--manifest-path").arg(dir.join("Cargo.toml")).arg("--target-dir").arg(target_dir);
    if release {
        build.arg("--release");
    }
    if profile {
        build.arg("--features").arg("profile");
    }
    if let Some(t) = target {
        // The device program's link arguments come from its build.rs; flags set for this
        // computer (`RUSTFLAGS`) or in a `.cargo/config.toml` around the current folder are not
        // for it: an empty CARGO_ENCODED_RUSTFLAGS overrides them all.
        build.arg("--target").arg(t).env("CARGO_ENCODED_RUSTFLAGS", "").env_remove("RUSTFLAGS");
    }
    let status = if std::io::stderr().is_terminal() {
        with_spinner(build, &format!("building {}{first}", model.display()))?
    } else {
        eprintln!("building {} in {}{first}", model.display(), dir.display());
        build.arg("--quiet").status().map_err(|e| Error::invalid(format!("cannot run cargo: {e}")))?
    };
    if !status.success() {
        return Err(Error::invalid(format!("building the generated crate failed ({status}); see the messages above"))
            .in_file(model));
    }
    Ok(())
}

/// Runs the cargo `build` with a spinner showing cargo's current step (`Compiling mlf-build …`)
/// after `label`; cargo's messages are printed after it ends when the build failed, and its
/// warnings when it succeeded.
fn with_spinner(mut build: Command, label: &str) -> Result<std::process::ExitStatus, Error> {
    let pb = crate::build::spinner(label);
    let mut child = build
        .arg("--color")
        .arg("always")
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::invalid(format!("cannot run cargo: {e}")))?;
    let mut lines = Vec::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let step = strip_ansi(&line);
            let verb = step.split_whitespace().next().unwrap_or("");
            if STEPS.contains(&verb) {
                pb.set_message(step.trim().to_string());
            } else {
                lines.push(line);
            }
        }
    }
    let status = child.wait().map_err(|e| Error::invalid(format!("cannot run cargo: {e}")))?;
    pb.finish_and_clear();
    for line in &lines {
        eprintln!("{line}");
    }
    Ok(status)
}

/// Cargo's status words: lines starting with one are progress, shown in the spinner.
const STEPS: &[&str] = &[
    "Compiling",
    "Checking",
    "Building",
    "Finished",
    "Locking",
    "Adding",
    "Updating",
    "Downloading",
    "Downloaded",
    "Blocking",
    "Fresh",
    "Running",
    "Packaging",
];

/// `s` without ANSI colour sequences (`ESC [ … m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A dependency spec from [`crate::template::deps`] with the crate's default features off (`{ path = … }` or a
/// version string).
pub fn without_default_features(spec: &str) -> String {
    match spec.strip_suffix(" }") {
        Some(table) => format!("{table}, default-features = false }}"),
        None => format!("{{ version = {spec}, default-features = false }}"),
    }
}

/// Dependency specs for mlf-runtime (`macros`, and `std` when `std`) and mlf-build: this source
/// tree when it is present (a checkout), else the published crates.
fn runner_deps(std: bool) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf);
    crate::template::deps(std, root.filter(|r| r.join("mlf-runtime/Cargo.toml").is_file()).as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_steps_are_read_through_colours() {
        let line = "\u{1b}[1m\u{1b}[92m   Compiling\u{1b}[0m mlf-build v0.1.0";
        assert_eq!(strip_ansi(line), "   Compiling mlf-build v0.1.0");
        assert!(STEPS.contains(&strip_ansi(line).split_whitespace().next().unwrap()));
    }
}
