//! The package names `cargo mlf new` accepts: those cargo accepts (`cargo new`'s rules: ASCII
//! letters, digits, `-` and `_`, not starting with a digit; no Rust keyword, no name of a
//! built-in crate, no name cargo reserves for its build folders, no Windows device name), so a
//! crate that `cargo mlf new` writes is one cargo builds.

use mlf_build::Error;

/// Rust's keywords, strict and reserved (cargo refuses them as package names).
const KEYWORDS: &[&str] = &[
    "Self", "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro",
    "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static", "struct", "super",
    "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// The crates every Rust program can name without a dependency.
const BUILT_IN: [&str; 6] = ["test", "core", "std", "alloc", "proc_macro", "proc-macro"];

/// Names cargo gives folders of its target directory (`target/debug/deps`, …).
const ARTIFACT_DIRS: [&str; 4] = ["deps", "examples", "build", "incremental"];

/// Checks `name` as a package name; the error says what is wrong and how to choose another
/// (`--name NAME`, or another folder).
pub fn check(name: &str) -> Result<(), Error> {
    match problem(name) {
        None => Ok(()),
        Some(why) => Err(Error::invalid(format!(
            "`{name}` cannot be a package name: {why}; use --name NAME to choose another (the folder keeps its name)"
        ))),
    }
}

/// What makes `name` unusable, or `None`.
fn problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if let Some(c) = name.chars().find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        return Some(format!("{c:?} is not allowed (only ASCII letters, digits, `-` and `_`)"));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Some("it starts with a digit".into());
    }
    if name.starts_with('-') {
        return Some("it starts with `-`".into());
    }
    if KEYWORDS.contains(&name) || KEYWORDS.contains(&name.replace('-', "_").as_str()) {
        return Some("it is a Rust keyword".into());
    }
    if BUILT_IN.contains(&name) {
        return Some("it is the name of a crate built into Rust".into());
    }
    if ARTIFACT_DIRS.contains(&name) {
        return Some("cargo reserves it for a folder of its build output".into());
    }
    if is_windows_device(name) {
        return Some("it is a reserved device name on Windows".into());
    }
    None
}

/// `con`, `prn`, `aux`, `nul`, `com1`…`com9`, `lpt1`…`lpt9`, in any case.
fn is_windows_device(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if ["con", "prn", "aux", "nul"].contains(&lower.as_str()) {
        return true;
    }
    let numbered = lower.strip_prefix("com").or_else(|| lower.strip_prefix("lpt"));
    numbered.is_some_and(|n| n.len() == 1 && matches!(n.as_bytes()[0], b'1'..=b'9'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted() {
        for good in ["demo-host_1", "kws", "_x", "Digits", "tests", "com0", "lpt10", "console", "builds", "std2"] {
            assert!(check(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn refused_with_the_cause() {
        for (bad, why) in [
            ("", "empty"),
            ("1demo", "digit"),
            ("-x", "starts with `-`"),
            ("yield", "keyword"),
            ("de mo", "' ' is not allowed"),
            ("dé", "'é' is not allowed"),
            ("a.b", "'.' is not allowed"),
            ("fn", "keyword"),
            ("self", "keyword"),
            ("async", "keyword"),
            ("test", "built into Rust"),
            ("core", "built into Rust"),
            ("std", "built into Rust"),
            ("alloc", "built into Rust"),
            ("proc_macro", "built into Rust"),
            ("proc-macro", "built into Rust"),
            ("deps", "build output"),
            ("examples", "build output"),
            ("build", "build output"),
            ("incremental", "build output"),
            ("con", "Windows"),
            ("NUL", "Windows"),
            ("aux", "Windows"),
            ("prn", "Windows"),
            ("com1", "Windows"),
            ("LPT9", "Windows"),
        ] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("--name NAME") && e.contains(&format!("`{bad}`")), "{bad:?}: {e}");
        }
    }
}
