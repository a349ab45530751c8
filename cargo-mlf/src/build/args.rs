//! What `cargo mlf build` reads of the `cargo build` arguments it passes on: the packages, the
//! targets, the profile, the message format, `--color`, and its own options among them.

use std::path::PathBuf;

use mlf_build::Error;

/// What `cargo mlf build` needs to know from cargo's arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CargoArgs {
    /// `--manifest-path`.
    pub manifest_path: Option<PathBuf>,
    /// `--target` (each one).
    pub targets: Vec<String>,
    /// `-p`/`--package`.
    pub packages: Vec<String>,
    /// `--workspace`/`--all`.
    pub workspace: bool,
    /// `--exclude`.
    pub exclude: Vec<String>,
    /// `--message-format json…`.
    pub json: bool,
    /// `--message-format`, as given.
    pub message_format: Option<String>,
    /// `--target-dir`.
    pub target_dir: Option<PathBuf>,
    /// `--config` (each one).
    pub configs: Vec<String>,
    /// `--release` or `--profile NAME`, as given (`None`: the dev profile).
    pub profile: Option<String>,
}

impl CargoArgs {
    /// Whether cargo builds with debug assertions: the dev and test profiles (the default), not
    /// `--release`, `--profile release|bench` or a profile of the crate's own.
    pub fn debug_assertions(&self) -> bool {
        matches!(self.profile.as_deref(), None | Some("dev" | "test"))
    }
}

/// Options of `cargo build` that take a value (so that value is not read as an option).
const TAKES_VALUE: &[&str] = &[
    "--features",
    "-F",
    "--bin",
    "--example",
    "--test",
    "--bench",
    "--jobs",
    "-j",
    "--profile",
    "--color",
    "-Z",
    "--lockfile-path",
    "--artifact-dir",
    "--out-dir",
];

/// Reads what matters here from `cargo build` arguments. This command's own options found among
/// them (`--plan-svg DIR`, `--check-only`) are set in `plan_svg` and `check_only` and removed;
/// the rest is returned, to pass to `cargo build`.
pub fn scan(
    args: &[String],
    plan_svg: &mut Option<PathBuf>,
    check_only: &mut bool,
) -> Result<(CargoArgs, Vec<String>), Error> {
    let mut out = CargoArgs::default();
    let mut pass = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let short = |p: &str| a.strip_prefix(p).filter(|v| !v.is_empty()).map(str::to_string);
        let value = |i: &mut usize| -> Option<String> {
            if inline.is_some() {
                return inline.clone();
            }
            *i += 1;
            args.get(*i).cloned()
        };
        match flag {
            "--plan-svg" => {
                let dir = value(&mut i).filter(|v| !v.is_empty());
                *plan_svg = Some(dir.map(PathBuf::from).ok_or_else(|| Error::invalid("--plan-svg needs a folder"))?);
                i += 1;
                continue;
            }
            "--check-only" => {
                *check_only = true;
                i += 1;
                continue;
            }
            _ => {}
        }
        let start = i;
        match flag {
            "--manifest-path" => out.manifest_path = value(&mut i).map(PathBuf::from),
            "--target" => out.targets.extend(value(&mut i)),
            "--package" | "-p" => out.packages.extend(value(&mut i)),
            "--workspace" | "--all" => out.workspace = true,
            "--exclude" => out.exclude.extend(value(&mut i)),
            "--target-dir" => out.target_dir = value(&mut i).map(PathBuf::from),
            "--config" => out.configs.extend(value(&mut i)),
            "--release" | "-r" => out.profile = Some("release".into()),
            "--profile" => out.profile = value(&mut i),
            "--color" => {
                let when = value(&mut i).unwrap_or_default();
                let color = <crate::diag::Color as clap::ValueEnum>::from_str(&when, false).ok();
                crate::diag::set_color(color);
            }
            "--message-format" => {
                out.message_format = value(&mut i);
                if out.message_format.as_ref().is_some_and(|v| v.split(',').any(|f| f.trim().starts_with("json"))) {
                    out.json = true;
                }
            }
            f if TAKES_VALUE.contains(&f) && inline.is_none() => i += 1,
            _ => {
                if let Some(p) = short("-p") {
                    out.packages.push(p);
                }
            }
        }
        pass.extend(args[start..=i.min(args.len() - 1)].iter().cloned());
        i += 1;
    }
    Ok((out, pass))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scans_cargo_arguments() {
        let (mut svg, mut only) = (None, false);
        let (c, pass) = scan(
            &s(&[
                "--release",
                "--target",
                "thumbv7em-none-eabihf",
                "-pdemo",
                "--features",
                "--target",
                "--plan-svg",
                "out",
                "--message-format=json-render-diagnostics",
                "--manifest-path=x/Cargo.toml",
                "--check-only",
            ]),
            &mut svg,
            &mut only,
        )
        .unwrap();
        assert_eq!(c.targets, vec!["thumbv7em-none-eabihf"]);
        assert_eq!(c.packages, vec!["demo"]);
        assert!(c.json);
        assert_eq!(c.manifest_path, Some(PathBuf::from("x/Cargo.toml")));
        assert_eq!(svg, Some(PathBuf::from("out")));
        assert!(only);
        assert!(!c.debug_assertions(), "--release");
        assert_eq!(
            pass,
            s(&[
                "--release",
                "--target",
                "thumbv7em-none-eabihf",
                "-pdemo",
                "--features",
                "--target",
                "--message-format=json-render-diagnostics",
                "--manifest-path=x/Cargo.toml"
            ])
        );
    }

    #[test]
    fn plan_svg_without_a_folder_is_an_error() {
        for args in [&["--release", "--plan-svg"][..], &["--plan-svg="]] {
            let (mut svg, mut only) = (None, false);
            let e = scan(&s(args), &mut svg, &mut only).unwrap_err();
            assert!(e.to_string().contains("--plan-svg needs a folder"), "{args:?}: {e}");
        }
    }

    #[test]
    fn human_message_format_is_not_json() {
        let (mut svg, mut only) = (None, false);
        let (c, _) =
            scan(&s(&["--message-format", "short", "-p", "a", "--package", "b", "--workspace"]), &mut svg, &mut only)
                .unwrap();
        assert!(!c.json && c.workspace);
        assert_eq!(c.packages, vec!["a", "b"]);
        assert!(c.debug_assertions(), "the dev profile");
        let (c, _) = scan(&s(&["--profile", "test"]), &mut svg, &mut only).unwrap();
        assert!(c.debug_assertions());
        let (c, _) = scan(&s(&["--profile=bench"]), &mut svg, &mut only).unwrap();
        assert!(!c.debug_assertions());
    }
}
