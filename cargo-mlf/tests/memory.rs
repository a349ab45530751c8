//! Issue 28 through `cargo mlf build`: models on a shared arena are reported with their parts and
//! counted once in the crate's totals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The target folder the test crates check into (shared with `new_build.rs`).
fn shared_target() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-new-tests")
}

/// A crate at `dir` named `name` whose `Cargo.toml` ends with `table`.
fn bare_crate(dir: &Path, name: &str, table: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n{table}[workspace]\n"),
    )
    .unwrap();
}

/// `cargo mlf build --manifest-path DIR/Cargo.toml --target-dir <shared> [more]`.
fn mlf_build(dir: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "build", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(shared_target())
        .args(more)
        .output()
        .unwrap()
}

/// The JSON lines with `reason`.
fn json_lines(stdout: &str, reason: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["reason"] == reason)
        .collect()
}

/// Two different models (the digits graph, the KWS AOT archive) listed with `arena = "models"`:
/// each model's report says its arena is its part of the shared arena, the package's line shows
/// the arena (the larger part) with each part, and the crate's static RAM counts it once.
#[test]
fn shared_arena_is_reported_with_each_models_part_and_counted_once() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("shared_arena_is_reported_with_each_models_part") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("two-on-one");
    let digits = mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar");
    let kws = fx.join("mlf/kws-int8-aot-c/model.tar");
    let entry = |path: &Path, name: &str, arena: &str| {
        format!("[[package.metadata.mlf.models]]\npath = {:?}\nname = \"{name}\"\n{arena}", path.display().to_string())
    };
    let shared = entry(&digits, "digits", "arena = \"models\"\n") + &entry(&kws, "kws", "arena = \"models\"\n");
    bare_crate(&dir, "two-on-one", &shared);
    let out = mlf_build(&dir, &["--check-only", "--message-format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let models = json_lines(&stdout, "mlf-model-report");
    let arena = |m: &Value| m["ram"]["arena"].as_u64().unwrap();
    let (d, k) = (arena(&models[0]), arena(&models[1]));
    assert!(models.iter().all(|m| m["shared_arena"] == "models"), "{stdout}");
    assert!(d > 0 && k > d, "digits {d}, kws {k}");
    let total = |m: &Value| m["ram"]["total"].as_u64().unwrap();
    let package = &json_lines(&stdout, "mlf-package-report")[0];
    // The crate's RAM: both models' totals, the smaller arena counted only as part of the larger.
    assert_eq!(package["ram"].as_u64().unwrap(), total(&models[0]) + total(&models[1]) - d, "{package}");
    let a = &package["shared_arenas"][0];
    assert_eq!(a["name"], "models", "{package}");
    assert_eq!(a["bytes"].as_u64(), Some(k), "{package}");
    assert_eq!(a["parts"], serde_json::json!([["digits", d], ["kws", k]]), "{package}");

    // The human report.
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("its part of the shared arena `models`"), "{err}");
    let line = format!(
        "shared arena models: {k} bytes ({}), the largest part (on arenas of their own: {} bytes); parts: digits {d}, kws {k}\n",
        mlf_build::__private::size::human(k),
        d + k
    );
    assert!(err.contains(&line), "{line}\nnot in\n{err}");
    assert!(err.contains("(each shared arena counted once)"), "{err}");

    // Without the arena, the crate counts both.
    let apart = entry(&digits, "digits", "") + &entry(&kws, "kws", "");
    bare_crate(&dir, "two-on-one", &apart);
    let out = mlf_build(&dir, &["--check-only", "--message-format", "json"]);
    let stdout = text(&out.stdout);
    let apart = &json_lines(&stdout, "mlf-package-report")[0];
    assert_eq!(apart["ram"].as_u64().unwrap(), package["ram"].as_u64().unwrap() + d, "{apart}");
    assert_eq!(apart["shared_arenas"], serde_json::json!([]), "{apart}");
}
