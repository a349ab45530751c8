//! Archives nobody here has seen, through the commands a user runs: derived from the digits AOT
//! archive (`mlf_fixtures::derived`), refused ones end `cargo mlf run`, `cargo mlf build` and a
//! template crate's plain `cargo build` with one error and no panic; a BYOC archive runs with its
//! vendor library supplied and is refused without it; `inspect` says where every fixture runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mlf_fixtures::derived::{self, Members};
use mlf_fixtures::{Manifest, compare, fixtures_or_skip, mlf_fixtures, write_tar};
use serde_json::Value;

mod common;

const DEVICE_TARGETS: &[&str] = &[
    "thumbv6m-none-eabi",
    "thumbv7m-none-eabi",
    "thumbv7em-none-eabi",
    "thumbv7em-none-eabihf",
    "riscv64gc-unknown-none-elf",
];

fn root() -> PathBuf {
    mlf_fixtures::workspace_root()
}

fn work_dir() -> PathBuf {
    root().join("target/mlf-run-tests")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn cargo_mlf() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
    c.arg("mlf");
    c
}

/// `members` as `dir/name`.
fn tar_of(dir: &Path, name: &str, members: &Members) -> PathBuf {
    let path = dir.join(name);
    write_tar(&path, members);
    path
}

/// A refusal as the user sees it: failed, exactly one line starting with `error` (besides
/// cargo's summary of a build script's errors), no panic and no backtrace, and every one of
/// `names` in it.
fn assert_one_error(out: &Output, names: &[&str]) -> String {
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // cargo's own summary after a build script's error is not a second error.
    let errors = stderr.lines().filter(|l| l.starts_with("error") && *l != "error: build script logged errors").count();
    assert_eq!(errors, 1, "{stderr}");
    assert!(!stderr.contains("panicked at") && !stderr.contains("backtrace"), "{stderr}");
    for n in names {
        assert!(stderr.contains(n), "{n} not in:\n{stderr}");
    }
    stderr
}

/// An archive with two modules and no `--module`: one error naming the archive, listing the
/// modules and the flag that chooses one, before anything is built.
#[test]
fn several_modules_name_the_flag_that_chooses_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut members = derived::digits_aot_c();
    let meta = members.iter_mut().find(|(n, _)| n == "metadata.json").expect("metadata.json");
    let mut doc: Value = serde_json::from_slice(&meta.1).unwrap();
    let mut other = doc["modules"]["default"].clone();
    other["model_name"] = "other".into();
    doc["modules"]["other"] = other;
    meta.1 = serde_json::to_vec(&doc).unwrap();
    let model = tar_of(tmp.path(), "two-modules.tar", &members);
    let out = cargo_mlf().arg("run").arg(&model).args(["--fill", "zeros"]).output().unwrap();
    let stderr =
        assert_one_error(&out, &[&model.display().to_string(), "several modules (default, other)", "--module NAME"]);
    assert!(!stderr.contains("building"), "{stderr}");
}

/// The digits vectors (the derived archives are the digits MLP still).
fn digits_vectors() -> (PathBuf, Manifest) {
    let dir = root().join("examples/digits/model");
    let manifest = Manifest::read(&dir).expect("digits vectors");
    (dir, manifest)
}

#[test]
fn run_refuses_dsp_code_on_the_host_before_building_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tar_of(tmp.path(), "dsp.tar", &derived::with_dsp_intrinsics(derived::digits_aot_c()));
    let (dir, manifest) = digits_vectors();
    let work = tmp.path().join("work");
    let out = common::run_command(&model, &dir, &manifest.cases[0], &tmp.path().join("out"), &work).output().unwrap();
    assert_one_error(&out, &["dsp.tar", "<arm_acle.h>", "Cortex-M DSP"]);
    assert!(!work.exists(), "a runner crate was written for a refused model");
}

#[test]
fn a_vendor_library_runs_when_supplied_and_is_named_when_not() {
    let tmp = tempfile::tempdir().unwrap();
    let members = derived::calling_vendor(derived::digits_aot_c(), "arm_nnfunctions.h", "arm_fake_check");
    let model = tar_of(tmp.path(), "byoc.tar", &members);
    let vendor = tmp.path().join("vendor");
    derived::write_vendor_library(&vendor, "arm_nnfunctions.h", "arm_fake_check");
    let (dir, manifest) = digits_vectors();

    let case = &manifest.cases[0];
    let out = common::run_command(&model, &dir, case, &tmp.path().join("refused"), &work_dir()).output().unwrap();
    assert_one_error(&out, &["<arm_nnfunctions.h>", "CMSIS-NN", "--include-dir"]);

    for (ci, case) in manifest.cases.iter().enumerate() {
        let outputs = tmp.path().join(format!("out{ci}"));
        let out = common::run_command(&model, &dir, case, &outputs, &work_dir())
            .arg("--include-dir")
            .arg(vendor.join("include"))
            .arg("--c-source")
            .arg(vendor.join("src"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let got = std::fs::read(common::output_file(&text(&out.stderr), 0)).unwrap();
        let want = std::fs::read(dir.join("vectors").join(case.outputs[0].file.as_ref().unwrap())).unwrap();
        compare(&case.outputs[0].dtype, &got, &want, case).unwrap_or_else(|e| panic!("case {ci}: {e}"));
    }
}

/// Builds `vendor/src/*.c` into `vendor/lib/libvendor.a` with the host's `cc` and `ar`.
fn prebuilt(vendor: &Path, function: &str) -> PathBuf {
    let lib = vendor.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let obj = lib.join(format!("{function}.o"));
    let cc = Command::new("cc")
        .args(["-c", "-O2", "-fPIC", "-I"])
        .arg(vendor.join("include"))
        .arg(vendor.join(format!("src/{function}.c")))
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap();
    assert!(cc.success());
    let archive = lib.join("libvendor.a");
    assert!(Command::new("ar").arg("rcs").arg(&archive).arg(&obj).status().unwrap().success());
    archive
}

#[test]
fn a_prebuilt_vendor_library_is_linked() {
    let tmp = tempfile::tempdir().unwrap();
    let members = derived::calling_vendor(derived::digits_aot_c(), "arm_nnfunctions.h", "arm_fake_check");
    let model = tar_of(tmp.path(), "byoc-prebuilt.tar", &members);
    let vendor = tmp.path().join("vendor");
    derived::write_vendor_library(&vendor, "arm_nnfunctions.h", "arm_fake_check");
    let library = prebuilt(&vendor, "arm_fake_check");
    let (dir, manifest) = digits_vectors();
    let case = &manifest.cases[1];
    let outputs = tmp.path().join("out");
    let out = common::run_command(&model, &dir, case, &outputs, &work_dir())
        .arg("--include-dir")
        .arg(vendor.join("include"))
        .arg("--library")
        .arg(&library)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = std::fs::read(common::output_file(&text(&out.stderr), 0)).unwrap();
    let want = std::fs::read(dir.join("vectors").join(case.outputs[0].file.as_ref().unwrap())).unwrap();
    compare(&case.outputs[0].dtype, &got, &want, case).unwrap();
}

#[test]
fn a_template_crate_with_a_refused_archive_fails_with_one_error() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tar_of(tmp.path(), "dsp.tar", &derived::with_dsp_intrinsics(derived::digits_aot_c()));
    let dir = tmp.path().join("dsp-host");
    let new =
        cargo_mlf().arg("new").arg(&dir).arg("--model").arg(&model).arg("--mlf-path").arg(root()).output().unwrap();
    assert!(new.status.success(), "{}", text(&new.stderr));
    let manifest = dir.join("Cargo.toml");
    let target = root().join("target/mlf-new-tests");

    // `cargo mlf build` checks before cargo builds anything.
    let out = cargo_mlf().arg("build").arg("--manifest-path").arg(&manifest).arg("--target-dir").arg(&target).output();
    let stderr = assert_one_error(&out.unwrap(), &["dsp.tar", "<arm_acle.h>"]);
    assert!(!stderr.contains("Compiling"), "{stderr}");

    // A plain `cargo build`: the template's build.rs reports through cargo, without a panic.
    let out = Command::new(env!("CARGO"))
        .arg("build")
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    assert_one_error(&out, &["<arm_acle.h>", "Cortex-M DSP"]);
}

/// `cargo mlf inspect --json PATH` with `env`.
fn inspect(path: &Path, env: &[(&str, &str)]) -> Value {
    let out = cargo_mlf().args(["inspect", "--json"]).arg(path).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "{}: {}", path.display(), text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `inspect`'s verdicts as (target, runs, reasons joined, c_compiler), the host first.
fn runs_on(report: &Value) -> Vec<(String, bool, String, Option<String>)> {
    let list = report["runs_on"].as_array().expect("runs_on");
    assert!(list[0]["host"].as_bool().unwrap(), "{list:?}");
    list.iter()
        .map(|r| {
            let why: Vec<&str> = r["why_not"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
            (
                r["target"].as_str().unwrap().to_string(),
                r["runs"].as_bool().unwrap(),
                why.join("\n"),
                r["c_compiler"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn inspect_says_where_every_fixture_runs() {
    let Some(fixtures) = fixtures_or_skip("inspect_says_where_every_fixture_runs") else { return };
    let mut models: Vec<(String, PathBuf)> = mlf_fixtures(&fixtures).into_iter().map(|f| (f.name, f.model)).collect();
    for e in std::fs::read_dir(fixtures.join("kmodel")).unwrap().flatten() {
        for f in std::fs::read_dir(e.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|x| x == "kmodel") {
                models.push((e.file_name().to_string_lossy().into_owned(), f.path()));
            }
        }
    }
    let mut checked = 0;
    for (name, model) in &models {
        let folder = model.ancestors().find(|a| a.file_name().is_some_and(|n| n == name.as_str())).unwrap();
        let expect: Value = std::fs::read(folder.join("EXPECT.json"))
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap_or(Value::Null);
        if expect["inspect"] == false {
            continue;
        }
        let runs = runs_on(&inspect(model, &[]));
        let targets: Vec<&str> = runs.iter().skip(1).map(|r| r.0.as_str()).collect();
        assert_eq!(targets, DEVICE_TARGETS, "{name}");
        let runnable = expect["runnable"] != false;
        for (target, runs, why, _) in &runs {
            assert_eq!(*runs, runnable, "{name} on {target}: {why}");
            assert_eq!(why.is_empty(), runnable, "{name} on {target}");
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} fixtures inspected");
}

#[test]
fn inspect_names_the_target_feature_and_the_missing_cross_compiler() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tar_of(tmp.path(), "dsp.tar", &derived::with_dsp_intrinsics(derived::digits_aot_c()));
    let runs = runs_on(&inspect(&model, &[("CC_thumbv7em_none_eabihf", "/no/such/arm-none-eabi-gcc")]));
    for (target, runs, why, compiler) in &runs {
        match target.as_str() {
            "thumbv7em-none-eabi" | "thumbv7em-none-eabihf" => assert!(runs, "{target}: {why}"),
            "thumbv6m-none-eabi" | "thumbv7m-none-eabi" => {
                assert!(!runs && why.contains("__smlad") && why.contains("`dsp`"), "{target}: {why}")
            }
            _ => assert!(!runs && why.contains("<arm_acle.h>"), "{target}: {why}"),
        }
        if target == "thumbv7em-none-eabihf" {
            let c = compiler.as_deref().unwrap_or_default();
            assert_eq!(
                c,
                "no C compiler for thumbv7em-none-eabihf: install arm-none-eabi-gcc (Debian/Ubuntu: gcc-arm-none-eabi libnewlib-arm-none-eabi) or set CC_thumbv7em_none_eabihf"
            );
        }
    }
}
