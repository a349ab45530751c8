//! `cargo mlf new --template firmware` and `--template k210` make crates that `cargo run`
//! builds for the device and runs under QEMU out of the box. Without QEMU, the Rust target or
//! arm-none-eabi-gcc these are skipped with one line (`.ci/device-tools` installs them); with
//! `CI=true` they fail.

use std::path::Path;
use std::process::{Command, Output};

use device_tests::programs::{RISCV64, THUMBV7EM};
use device_tests::tools::{self, Need};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `cargo mlf new NAME --path DIR --mlf-path <this checkout> [more]`.
fn new_crate(name: &str, dir: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "new", name])
        .args(more)
        .arg("--path")
        .arg(dir)
        .arg("--mlf-path")
        .arg(mlf_fixtures::workspace_root())
        .output()
        .unwrap()
}

/// `cargo run` in `dir`, as its user types it, with the repository's `.qemu/bin` on the PATH
/// and the device tests' shared target folder.
fn cargo_run(dir: &Path) -> Output {
    let mut cmd = Command::new(tools::cargo());
    cmd.arg("run").current_dir(dir).env("PATH", tools::path_with_qemu()).env("CARGO_TARGET_DIR", tools::target_dir());
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET"] {
        cmd.env_remove(var);
    }
    cmd.output().unwrap()
}

#[test]
fn firmware_template_runs_in_qemu_with_cargo_run_and_a_panic_exits_with_failure() {
    let test = "firmware_template_runs_in_qemu";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("digits-fw");
    // No --model: the crate gets the digits model bundled with cargo-mlf.
    let out = new_crate("digits-fw", &dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    assert!(config.contains("target = \"thumbv7em-none-eabihf\"") && config.contains("-Tlink.x"), "{config}");
    assert!(dir.join("memory.x").is_file() && dir.join("README.md").is_file());

    let run = cargo_run(&dir);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));
    let stdout = text(&run.stdout);
    assert!(
        stdout.starts_with("digits: ran from static memory (176 bytes of arena); largest output at index "),
        "{stdout}"
    );

    // A panic prints where it happened and ends QEMU with a failure status.
    let main_rs = dir.join("src/main.rs");
    let main = std::fs::read_to_string(&main_rs).unwrap();
    let take = "    let mut model = digits::Model::take()";
    std::fs::write(
        &main_rs,
        main.replacen(take, &format!("    if true {{\n        panic!(\"probe\");\n    }}\n{take}"), 1),
    )
    .unwrap();
    let run = cargo_run(&dir);
    assert_eq!(run.status.code(), Some(101), "{}\n{}", text(&run.stdout), text(&run.stderr));
    assert!(text(&run.stderr).contains("probe"), "{}", text(&run.stderr));
}

#[test]
fn k210_template_runs_a_kmodel_in_qemu_with_cargo_run() {
    let test = "k210_template_runs_a_kmodel";
    if !tools::require(test, &[Need::Target(RISCV64), Need::QemuRiscv, Need::Fixtures]) {
        return;
    }
    let model = mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v4-iris/iris.kmodel");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("iris-k210");
    let out = new_crate("iris-k210", &dir, &["--template", "k210", "--model", model.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    assert!(config.contains("riscv64gc-unknown-none-elf") && config.contains("-Tmemory.x"), "{config}");
    let run = cargo_run(&dir);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));
    assert!(text(&run.stdout).starts_with("iris: ran from static memory ("), "{}", text(&run.stdout));
}

#[test]
fn k210_template_needs_a_kmodel() {
    let tmp = tempfile::tempdir().unwrap();
    let out = new_crate("x", &tmp.path().join("x"), &["--template", "k210"]);
    assert!(!out.status.success() && text(&out.stderr).contains("--model PATH.kmodel"), "{}", text(&out.stderr));
    let digits = mlf_fixtures::digits_tar();
    let out = new_crate("y", &tmp.path().join("y"), &["--template", "k210", "--model", digits.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out.stderr).contains("runs kmodels"), "{}", text(&out.stderr));
    assert!(!tmp.path().join("y").exists(), "nothing is written when the model does not fit the template");
}
