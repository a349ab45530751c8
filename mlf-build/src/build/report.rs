//! Reporting an error from a build script without a panic: cargo's `cargo::error=` directive
//! where the toolchain understands it (cargo ≥ 1.84, and a package whose `rust-version`, if any,
//! allows the `cargo::` syntax: ≥ 1.77), else the message on stderr and exit status 1. Every
//! build script mlf writes, and the README's idiom, end through [`report_error`].

use std::fmt::Display;

/// Reports `error` and ends the program: inside a build script as one cargo error (one
/// `cargo::error=` line, the message's lines joined by `; `; cargo then fails the build with "build script
/// logged errors", no panic, no backtrace), elsewhere as `error: …` on stderr with exit status 1.
pub fn report_error(error: impl Display) -> ! {
    let message = error.to_string();
    if error_directive_understood() {
        // One directive: cargo shows one error, every reason in it (a directive is one line).
        println!("cargo::error={}", one_line(&message));
        // The directive fails the build; a non-zero status would add cargo's dump of the
        // script's whole output to the error.
        std::process::exit(0);
    }
    eprintln!("error: {message}");
    std::process::exit(1)
}

/// Whether this is a build script run by a cargo that understands `cargo::error=` for this
/// package.
fn error_directive_understood() -> bool {
    let (Some(cargo), Some(_)) = (std::env::var_os("CARGO"), std::env::var_os("OUT_DIR")) else { return false };
    let msrv_allows = std::env::var("CARGO_PKG_RUST_VERSION")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .is_none_or(|v| version(&v).is_some_and(|v| v >= (1, 77)));
    let cargo_version = std::process::Command::new(cargo)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).and_then(version));
    msrv_allows && cargo_version.is_some_and(|v| v >= (1, 84))
}

/// The non-empty lines of `message` joined by `; `.
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// `1.84.0`, `1.77`, `1.95.0-nightly` → (major, minor).
fn version(s: &str) -> Option<(u32, u32)> {
    let mut parts = s.trim().split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::{one_line, version};

    #[test]
    fn one_line_per_error() {
        assert_eq!(one_line("a.tar: first\n\n  second\n"), "a.tar: first; second");
    }

    #[test]
    fn versions() {
        assert_eq!(version("1.84.0"), Some((1, 84)));
        assert_eq!(version("1.77"), Some((1, 77)));
        assert_eq!(version("1.95.0-nightly"), Some((1, 95)));
        assert_eq!(version("x"), None);
    }
}
