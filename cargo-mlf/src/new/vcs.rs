//! Version control for a new crate, as `cargo new` does it: a `.gitignore`, and `git init`
//! unless the folder is already inside a git repository (or `--vcs none`).

use std::path::Path;
use std::process::{Command, Stdio};

use mlf_build::Error;

use crate::io_error::InFile;

/// `--vcs`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vcs {
    /// A git repository (unless the folder is inside one already) and a `.gitignore`.
    Git,
    /// Neither.
    None,
}

/// What the crate ignores: cargo's build folder.
const GITIGNORE: &str = "/target\n";

/// Sets up version control in `dir` (the new crate's folder). Returns what was done, for the
/// `new` summary (`None` when nothing was).
pub fn init(dir: &Path, vcs: Vcs) -> Result<Option<&'static str>, Error> {
    if vcs == Vcs::None {
        return Ok(None);
    }
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, GITIGNORE).in_file(&ignore)?;
    }
    if inside_repository(dir) {
        return Ok(Some("inside an existing git repository: added .gitignore"));
    }
    let init =
        Command::new("git").arg("init").arg("--quiet").arg(dir).stdout(Stdio::null()).stderr(Stdio::null()).status();
    match init {
        Ok(s) if s.success() => Ok(Some("initialised a git repository")),
        // As cargo: no git on this computer is no reason to fail.
        _ => Ok(Some("git was not found: added .gitignore, no repository")),
    }
}

/// Whether `dir` is inside a git work tree.
fn inside_repository(dir: &Path) -> bool {
    Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
