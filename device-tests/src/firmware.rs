//! Builds a program of `firmware/` for its target with cargo (release profile, the shared
//! target folder [`crate::tools::target_dir`]) and returns the linked ELF and the package's
//! build-script output folder (where the external-parameter programs' archives are).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::Message;

/// A built program.
#[derive(Clone, Debug)]
pub struct Built {
    /// The linked ELF.
    pub elf: PathBuf,
    /// `OUT_DIR` of the package's build script, if it has one.
    pub out_dir: Option<PathBuf>,
}

/// Builds `--bin bin` of package `package` in `workspace` (a folder holding a `Cargo.toml`,
/// and the `.cargo/config.toml` that gives each target its link arguments) for `target`.
/// Panics with cargo's diagnostics when the build fails.
pub fn build(workspace: &Path, package: &str, bin: &str, target: &str) -> Built {
    let mut cmd = Command::new(crate::tools::cargo());
    cmd.current_dir(workspace)
        .args(["build", "--release", "--message-format=json-render-diagnostics", "--target", target])
        .args(["-p", package, "--bin", bin])
        .env("CARGO_TARGET_DIR", crate::tools::target_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Settings of the cargo running the tests are not the firmware's.
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WORKSPACE_WRAPPER"] {
        cmd.env_remove(var);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("running cargo: {e}"));
    let (mut elf, mut out_dir) = (None, None);
    for message in Message::parse_stream(&out.stdout[..]).flatten() {
        match message {
            Message::CompilerArtifact(a) if a.target.name == bin && a.executable.is_some() => {
                elf = a.executable.map(PathBuf::from);
            }
            Message::BuildScriptExecuted(s)
                if s.package_id.repr.contains(&format!("#{package}@"))
                    || s.package_id.repr.contains(&format!("/{package}#")) =>
            {
                out_dir = Some(PathBuf::from(s.out_dir));
            }
            Message::CompilerMessage(m) => eprint!("{}", m.message.rendered.unwrap_or_default()),
            _ => {}
        }
    }
    assert!(
        out.status.success(),
        "cargo build -p {package} --bin {bin} --target {target} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Built { elf: elf.unwrap_or_else(|| panic!("cargo built no executable {bin}")), out_dir }
}

/// The repository's `firmware/` workspace.
pub fn workspace() -> PathBuf {
    crate::tools::root().join("firmware")
}
