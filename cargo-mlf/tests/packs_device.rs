//! Issue 29 on the emulated Cortex-M4F, through the CLI as a user runs it: a pack split (and
//! packed) from another model of the same shape — the digits model with one weight changed —
//! is refused when the program opens it, naming both model digests, before any parameter is
//! read; the model's own pack runs. (A pack signed with another key, and damaged A/B slots:
//! the `digits-slots` firmware, `device-tests`' `ab_slots_fall_back_from_a_damaged_or_foreign_newer_pack`.)

use std::path::Path;
use std::process::Command;

use device_tests::programs::THUMBV7EM;
use device_tests::tools::{self, Need};

mod common;

fn cargo_mlf(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).arg("mlf").args(args).output().unwrap()
}

/// Splits and packs `model` into `dir`; returns the pack and the digest `split` recorded.
fn split_and_pack(model: &Path, dir: &Path) -> (std::path::PathBuf, String) {
    let (split, pack) = (dir.join("split"), dir.join("params.tar"));
    let o = cargo_mlf(&["split".as_ref(), model.as_os_str(), "-o".as_ref(), split.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = cargo_mlf(&["pack".as_ref(), split.as_os_str(), "-o".as_ref(), pack.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let configure: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(split.join("configure.json")).unwrap()).unwrap();
    (pack, configure["digest"].as_str().unwrap().to_string())
}

#[test]
fn a_pack_from_another_model_of_the_same_shape_is_refused_on_cortex_m4() {
    if !tools::require("a_pack_from_another_model_is_refused", &[Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc])
    {
        return;
    }
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    let model = dir.join("digits.tar");
    let t = tempfile::tempdir().unwrap();
    // The same model with its last weight's last byte changed: same inputs, outputs, shapes.
    let other = t.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    tar::Archive::new(std::fs::File::open(&model).unwrap()).unpack(&other).unwrap();
    let params = other.join("parameters/default.params");
    let mut bytes = std::fs::read(&params).unwrap();
    *bytes.last_mut().unwrap() ^= 0x01;
    std::fs::write(&params, bytes).unwrap();
    let (own, own_digest) = split_and_pack(&model, &t.path().join("a"));
    let (foreign, foreign_digest) = split_and_pack(&other, &t.path().join("b"));
    assert_ne!(own_digest, foreign_digest);
    let manifest = mlf_fixtures::Manifest::read(&dir).unwrap();
    let run = |pack: &Path| {
        let out = t.path().join("out");
        common::run_command(&model, &dir, &manifest.cases[0], &out, &common::work_dir())
            .args(["--target", THUMBV7EM, "--params", "resident", "--from"])
            .arg(pack)
            .output()
            .unwrap()
    };
    let o = run(&foreign);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(stderr.contains("parameter pack made for another model or version"), "{stderr}");
    assert!(stderr.contains(&foreign_digest[..8]) && stderr.contains(&own_digest[..8]), "{stderr}");
    let o = run(&own);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
