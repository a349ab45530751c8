//! The published crates, as a user outside this checkout gets them: `cargo mlf new` in an empty
//! temporary folder makes a crate that depends on the published versions (`mlf-runtime =
//! "0.1.0"`, no path into the checkout), and that crate builds and classifies a digit against
//! the crates as `cargo package` packed them — `[patch.crates-io]` points at the unpacked
//! packages in `target/package/<crate>-<version>/`, which `.ci/package` leaves there.
//!
//! Without those packages (or with packages older than the sources) the test says so on one line
//! and skips; with `CI=true` that is a failure (`.ci/run` runs `.ci/package` first).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates a generated crate reaches, with a source file that must match the checkout's.
const PACKAGED: [(&str, &str); 5] = [
    ("mlf-runtime", "src/lib.rs"),
    ("mlf-macros", "src/lib.rs"),
    ("mlf-build", "src/lib.rs"),
    ("mlf-kmodel", "src/lib.rs"),
    ("mlf-pack", "src/lib.rs"),
];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The unpacked package folders, or `None` (after one line, or a panic in CI) when they are
/// missing or stale.
fn packages(root: &Path) -> Option<Vec<(&'static str, PathBuf)>> {
    let version = env!("CARGO_PKG_VERSION");
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let mut found = Vec::new();
    for (name, probe) in PACKAGED {
        let dir = target.join("package").join(format!("{name}-{version}"));
        let packed = std::fs::read(dir.join(probe)).ok();
        let problem = match packed {
            None => Some("missing"),
            Some(bytes) if bytes != std::fs::read(root.join(name).join(probe)).unwrap() => {
                Some("older than the sources")
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            let msg = format!("{} is {problem}: run .ci/package first", dir.display());
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg}");
            }
            eprintln!("skipped packaged::new_crate_builds_against_packages: {msg}");
            return None;
        }
        found.push((name, dir));
    }
    Some(found)
}

#[test]
fn new_crate_builds_against_packages() {
    let root = mlf_fixtures::workspace_root();
    let Some(packages) = packages(&root) else { return };
    let tmp = tempfile::Builder::new().prefix("mlf-packaged").tempdir().unwrap();
    assert!(!tmp.path().starts_with(&root), "the crate must be made outside the checkout");
    let dir = tmp.path().join("hello");

    // From the empty folder, as a user of a cargo-mlf from crates.io does it (--published: the
    // cargo-mlf under test was built from this checkout, so it would use it by path). The
    // crates are not on crates.io yet: `new` says so and what to do, and writes the crate.
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "new", "hello", "--published"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo mlf new hello: {}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("warning: the mlf crates 0.1.0 cannot be resolved")
            && said.contains("help: build the crate against a checkout of mlf"),
        "{said}"
    );
    let manifest = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&manifest).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        toml.contains(&format!("mlf-runtime = {{ version = \"{version}\", features = [\"macros\", \"std\"] }}"))
            && toml.contains(&format!("mlf-build = \"{version}\"")),
        "the crate should depend on the published versions:\n{toml}"
    );
    assert!(!toml.contains("{ path") && !toml.contains(root.to_str().unwrap()), "no path into the checkout:\n{toml}");

    // The packaged crates stand in for the registry's.
    let mut patch = String::from("\n[patch.crates-io]\n");
    for (name, dir) in &packages {
        patch.push_str(&format!("{name} = {{ path = {:?} }}\n", dir.display().to_string()));
    }
    std::fs::write(&manifest, toml + &patch).unwrap();
    // The checkout's lock file: the same versions of the other dependencies as the workspace.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let target = root.join("target/packaged-test");
    let vectors = root.join("examples/digits/model/vectors");
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["run", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .arg("--")
        .arg(format!("pixels={}", vectors.join("case0_in_pixels.bin").display()))
        .env("CARGO_INCREMENTAL", "0")
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "cargo run of the generated crate failed:\n{}\n{stdout}", text(&out.stderr));

    // The reference output's largest value is the digit the crate must print.
    let reference: Vec<f32> = std::fs::read(vectors.join("case0_out_0.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let digit = (0..reference.len()).max_by(|&a, &b| reference[a].total_cmp(&reference[b])).unwrap();
    assert!(stdout.contains(&format!("output output argmax: {digit}\n")), "expected digit {digit}:\n{stdout}");

    // Every mlf crate was built from its package, none from the checkout.
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        // Not `--offline`: metadata resolves every platform's dependencies, and those of other
        // platforms (`r-efi` for UEFI) were never downloaded by the build above.
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", text(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (name, dir) in &packages {
        let used = meta["packages"].as_array().unwrap().iter().find(|p| p["name"] == *name);
        let used = used.unwrap_or_else(|| panic!("{name} is not a dependency of the generated crate"));
        let path = PathBuf::from(used["manifest_path"].as_str().unwrap());
        assert_eq!(path, dir.join("Cargo.toml"), "{name} should come from its package");
    }
}

/// `cargo mlf new`'s bundled model (inside the package) is the example's model, byte for byte.
#[test]
fn bundled_digits_model_is_the_example() {
    let root = mlf_fixtures::workspace_root();
    let bundled = std::fs::read(root.join("cargo-mlf/templates/models/digits.tar")).unwrap();
    assert!(bundled == std::fs::read(mlf_fixtures::digits_tar()).unwrap(), "copy examples/digits/model/digits.tar");
}
