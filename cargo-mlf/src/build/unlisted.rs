//! Models a package's build script opens itself (`mlf_build::Model::open("…")`) without listing
//! them in `[package.metadata.mlf]`: `cargo mlf build` checks and reports only listed models
//! (it does not run build scripts), so it names these and says how to list them.

use std::path::{Path, PathBuf};

use crate::diag::Diag;

/// A package whose build script opens models that its table does not list.
#[derive(Debug, PartialEq, Eq)]
pub struct Unlisted {
    /// The package.
    pub package: String,
    /// Its build script.
    pub build_rs: PathBuf,
    /// The model paths it opens (string literals of `Model::open(…)` calls), as written.
    pub paths: Vec<String>,
}

impl Unlisted {
    /// The note `cargo mlf build` prints about them.
    pub fn diag(&self) -> Diag {
        let shown: Vec<String> = self.paths.iter().map(|p| format!("{p:?}")).collect();
        let entries: Vec<String> =
            self.paths.iter().map(|p| format!("[[package.metadata.mlf.models]] path = {p:?}")).collect();
        Diag::new(format!(
            "{}'s build.rs opens {} with Model::open, which cargo mlf build does not check or report",
            self.package,
            shown.join(", ")
        ))
        .help(format!(
            "list {} in Cargo.toml ({}) to have {} checked and reported before cargo builds; Model::open(path) in \
             build.rs then builds the listed entry with its options",
            if self.paths.len() == 1 { "it" } else { "them" },
            entries.join("; "),
            if self.paths.len() == 1 { "it" } else { "them" },
        ))
        .note("cargo mlf build reads [package.metadata.mlf]; it does not run build scripts")
    }
}

/// The string-literal paths of `Model::open("…")` calls in a build script's text.
pub fn opened_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("Model::open(") {
        let rest = text[at + "Model::open(".len()..].trim_start();
        let Some(rest) = rest.strip_prefix('"') else { continue };
        if let Some(end) = rest.find('"') {
            let path = &rest[..end];
            if !path.contains('\\') && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// The models `build_rs` opens that are not among `listed` (the table's paths, as written or
/// as they resolve from the package's folder `dir`).
pub fn find(package: &str, build_rs: &Path, dir: &Path, listed: &[PathBuf]) -> Option<Unlisted> {
    // A build script of the package's own: small, a regular file (read at most 1 MiB).
    std::fs::metadata(build_rs).ok().filter(|m| m.is_file() && m.len() <= 1 << 20)?;
    let text = std::fs::read_to_string(build_rs).ok()?;
    let same = |a: &Path, b: &Path| a == b || a.canonicalize().is_ok_and(|c| Some(c) == b.canonicalize().ok());
    let paths: Vec<String> =
        opened_paths(&text).into_iter().filter(|p| !listed.iter().any(|l| same(&dir.join(l), &dir.join(p)))).collect();
    (!paths.is_empty()).then(|| Unlisted { package: package.to_string(), build_rs: build_rs.to_path_buf(), paths })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_open_literals_are_found() {
        let text = "fn main() {\n    mlf_build::Model::open(\"models/digits.tar\")\n        .params(P::Streamed)\n        .compile_or_exit();\n    Model::open( \"b.tar\").compile().unwrap();\n    Model::open(path).compile();\n    Model::open(\"models/digits.tar\");\n}\n";
        assert_eq!(opened_paths(text), vec!["models/digits.tar", "b.tar"]);
    }

    #[test]
    fn listed_models_are_left_out() {
        let t = tempfile::tempdir().unwrap();
        let build_rs = t.path().join("build.rs");
        std::fs::write(
            &build_rs,
            "fn main() { mlf_build::Model::open(\"a.tar\").compile_or_exit(); Model::open(\"./b.tar\"); }",
        )
        .unwrap();
        std::fs::write(t.path().join("b.tar"), "").unwrap();
        let u = find("demo", &build_rs, t.path(), &[PathBuf::from("b.tar")]).unwrap();
        assert_eq!(u.paths, vec!["a.tar"]);
        let text = u.diag().render(crate::diag::Level::Warning, false);
        assert!(text.starts_with("warning: demo's build.rs opens \"a.tar\" with Model::open, which cargo mlf build does not check or report\n"), "{text}");
        assert!(
            text.contains("help: list it in Cargo.toml ([[package.metadata.mlf.models]] path = \"a.tar\")"),
            "{text}"
        );
        assert!(find("demo", &build_rs, t.path(), &[PathBuf::from("a.tar"), PathBuf::from("b.tar")]).is_none());
    }
}
