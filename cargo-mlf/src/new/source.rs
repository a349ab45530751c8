//! Where a generated crate takes the mlf crates (`mlf-runtime`, `mlf-build`) from: the checkout
//! given with `--mlf-path`, the checkout this cargo-mlf was built from (`cargo install --path
//! cargo-mlf`, or `cargo run -p cargo-mlf` inside one), or crates.io (`--published`, or a
//! cargo-mlf installed from crates.io). Published versions are resolved once the crate is
//! written, so a crate that cannot build is reported at `new`, with what to do.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_build::Error;

use crate::io_error::InFile;

/// Where the mlf crates come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A checkout of mlf, by path; `chosen` when `--mlf-path` named it.
    Checkout {
        /// The checkout's root (absolute).
        root: PathBuf,
        /// Whether `--mlf-path` chose it (else: the checkout cargo-mlf was built from).
        chosen: bool,
    },
    /// The published versions of this cargo-mlf's release.
    Published,
}

impl Source {
    /// The source for `--mlf-path` / `--published`: the named checkout, crates.io, else the
    /// checkout this cargo-mlf was built from when it still exists, else crates.io.
    pub fn choose(mlf_path: Option<&Path>, published: bool) -> Result<Source, Error> {
        if let Some(dir) = mlf_path {
            return Ok(Source::Checkout { root: checkout(dir)?, chosen: true });
        }
        if published {
            return Ok(Source::Published);
        }
        Ok(built_from().map_or(Source::Published, |root| Source::Checkout { root, chosen: false }))
    }

    /// The checkout, when the crates come from one.
    pub fn checkout(&self) -> Option<&Path> {
        match self {
            Source::Checkout { root, .. } => Some(root),
            Source::Published => None,
        }
    }

    /// The `note:` line `new` prints about it.
    pub fn note(&self) -> String {
        let version = env!("CARGO_PKG_VERSION");
        match self {
            Source::Checkout { root, chosen: true } => {
                format!("the crate depends on the mlf crates of {} by path (--mlf-path)", root.display())
            }
            Source::Checkout { root, chosen: false } => format!(
                "the crate depends on the mlf crates of {} by path: cargo-mlf was built from that checkout, and \
                 its crates are not on crates.io yet (--published for crates.io's {version}, --mlf-path DIR for \
                 another checkout)",
                root.display()
            ),
            Source::Published => format!("the crate depends on mlf-runtime and mlf-build {version} from crates.io"),
        }
    }
}

/// The absolute path of the mlf checkout `dir`, checked to hold the crates generated crates use.
pub fn checkout(dir: &Path) -> Result<PathBuf, Error> {
    let root = dir.canonicalize().in_file(dir)?;
    for krate in ["mlf-runtime", "mlf-build"] {
        if !root.join(krate).join("Cargo.toml").is_file() {
            return Err(Error::invalid(format!(
                "--mlf-path: no {krate}/Cargo.toml in this folder; give the root of a checkout of mlf"
            ))
            .in_file(dir));
        }
    }
    Ok(root)
}

/// The checkout this cargo-mlf was built from, when it was built from one (not from a package
/// cargo unpacked from a registry) and the checkout is still there.
pub fn built_from() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let is_checkout = root.join("Cargo.toml").is_file()
        && std::fs::read_to_string(root.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
        && ["mlf-runtime", "mlf-build", "cargo-mlf"].iter().all(|c| root.join(c).join("Cargo.toml").is_file());
    is_checkout.then(|| root.canonicalize().ok()).flatten()
}

/// Resolves the published mlf crates the new crate `dir` depends on (`cargo generate-lockfile`,
/// which the first build would run anyway). `Ok(None)` when they resolve; otherwise what cargo
/// said, with what to do.
pub fn check_published(dir: &Path) -> Option<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .arg("generate-lockfile")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .output()
        .ok()?;
    if out.status.success() {
        return None;
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.lines().find(|l| l.starts_with("error")).unwrap_or("cargo could not resolve them").trim();
    Some(said.trim_start_matches("error: ").to_string())
}

/// The help for published crates that did not resolve.
pub fn unresolved_help() -> String {
    format!(
        "build the crate against a checkout of mlf: in the checkout, `cargo install --locked --path cargo-mlf`, \
         then `cargo mlf new` again (it depends on that checkout by path), or give --mlf-path DIR; \
         or add [patch.crates-io] entries for mlf-runtime and mlf-build {} to Cargo.toml",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_build_comes_from_this_checkout() {
        let root = built_from().expect("the tests run in a checkout");
        assert!(root.join("mlf-runtime/Cargo.toml").is_file());
        assert_eq!(Source::choose(None, false).unwrap(), Source::Checkout { root: root.clone(), chosen: false });
        assert_eq!(Source::choose(None, true).unwrap(), Source::Published);
        assert!(Source::choose(None, false).unwrap().note().contains("not on crates.io yet"));
        let e = Source::choose(Some(Path::new("/")), false).unwrap_err().to_string();
        assert!(e.contains("--mlf-path: no mlf-runtime/Cargo.toml"), "{e}");
    }
}
