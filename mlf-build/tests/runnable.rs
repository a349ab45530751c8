//! Where a model can run, and the build's refusal before it compiles anything where it cannot:
//! every fixture on every target; archives derived from the digits AOT archive with Arm DSP
//! intrinsics, a vendor library's header, or the C device API of an accelerator.

use std::path::Path;

use mlf_build::__private::UserLibraries;
use mlf_build::__private::runnable::{self, refusals};
use mlf_build::ModelDesc;
use mlf_fixtures::derived::{self, Members};
use mlf_fixtures::{fixtures_or_skip, mlf_fixtures, write_members};

const HOST: &str = "x86_64-unknown-linux-gnu";
const TARGETS: &[&str] = &[
    HOST,
    "thumbv6m-none-eabi",
    "thumbv7m-none-eabi",
    "thumbv7em-none-eabi",
    "thumbv7em-none-eabihf",
    "riscv64gc-unknown-none-elf",
];

fn written(m: &Members) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), m);
    dir
}

fn read(dir: &Path) -> ModelDesc {
    mlf_build::open(dir).unwrap_or_else(|e| panic!("{e}"))
}

/// `build_into` for `target`: the error, and whether the compiler ran (an `obj` folder exists).
fn build_error(dir: &Path, model: mlf_build::Model, target: &str) -> (String, bool) {
    let out = tempfile::tempdir().unwrap();
    let e = model.build_into(dir, out.path(), "runnable", target, HOST, false).expect_err("must be refused");
    let compiled = walk_has(out.path(), "obj");
    (e.to_string(), compiled)
}

fn walk_has(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name() == name || (e.path().is_dir() && walk_has(&e.path(), name)))
}

#[test]
fn every_fixture_runs_on_every_target_except_what_cannot_run_anywhere() {
    let Some(root) = fixtures_or_skip("every_fixture_runs_on_every_target_except_what_cannot_run_anywhere") else {
        return;
    };
    for fx in mlf_fixtures(&root) {
        let d = read(&fx.model);
        for t in TARGETS {
            let why = refusals(&d, t, &UserLibraries::default());
            assert!(why.is_empty(), "{} on {t}: {why:?}", fx.name);
        }
    }
    let v5 = mlf_build::open(root.join("kmodel/v5-mnist-cpu/mnist.kmodel"));
    if let Ok(d) = v5 {
        for t in TARGETS {
            assert!(!refusals(&d, t, &UserLibraries::default()).is_empty(), "kmodel V5 on {t}");
        }
    }
}

#[test]
fn dsp_intrinsics_run_only_on_cores_with_the_dsp_extension() {
    let dir = written(&derived::with_dsp_intrinsics(derived::digits_aot_c()));
    let d = read(dir.path());
    let libs = UserLibraries::default();
    for t in ["thumbv6m-none-eabi", "thumbv7m-none-eabi"] {
        let why = refusals(&d, t, &libs).join("\n");
        assert!(why.contains("__smlad") && why.contains("`dsp`") && why.contains("thumbv7em"), "{t}: {why}");
        // Refused before the compiler runs, naming the target feature.
        let (e, compiled) = build_error(dir.path(), mlf_build::Model::open(dir.path()), t);
        assert!(e.contains("`dsp`") && e.contains(t) && !compiled, "{t}: {e}");
    }
    for t in [HOST, "riscv64gc-unknown-none-elf"] {
        let why = refusals(&d, t, &libs).join("\n");
        assert!(why.contains("arm_acle.h") && why.contains(t), "{t}: {why}");
    }
    for t in ["thumbv7em-none-eabi", "thumbv7em-none-eabihf"] {
        assert_eq!(refusals(&d, t, &libs), Vec::<String>::new(), "{t}");
    }
    // And on a Cortex-M4F it compiles, with the cross compiler.
    let target = "thumbv7em-none-eabihf";
    if let Some(missing) = runnable::missing_compiler(&d, target, HOST) {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI: {missing}");
        eprintln!("SKIP building for {target}: {missing}");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let built = mlf_build::Model::open(dir.path())
        .build_into(dir.path(), out.path(), "runnable", target, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    let report = built.report().unwrap();
    assert!(report.flash.code > 0, "{report}");
}

#[test]
fn a_vendor_header_is_refused_naming_its_library_until_the_user_supplies_it() {
    let dir = written(&derived::calling_vendor(derived::digits_aot_c(), "arm_nnfunctions.h", "arm_fake_check"));
    let d = read(dir.path());
    for t in TARGETS {
        let why = refusals(&d, t, &UserLibraries::default()).join("\n");
        assert!(
            why.contains("<arm_nnfunctions.h>") && why.contains("CMSIS-NN") && why.contains("include_dir"),
            "{t}: {why}"
        );
    }
    let (e, compiled) = build_error(dir.path(), mlf_build::Model::open(dir.path()), HOST);
    assert!(e.contains("arm_nnfunctions.h") && e.contains("CMSIS-NN") && !compiled, "{e}");
    // With the library's headers and sources the model builds.
    let vendor = tempfile::tempdir().unwrap();
    derived::write_vendor_library(vendor.path(), "arm_nnfunctions.h", "arm_fake_check");
    let libs = UserLibraries { include_dirs: vec![vendor.path().join("include")], ..Default::default() };
    assert!(refusals(&d, HOST, &libs).is_empty());
    let out = tempfile::tempdir().unwrap();
    mlf_build::Model::open(dir.path())
        .include_dir(vendor.path().join("include"))
        .c_source(vendor.path().join("src"))
        .build_into(dir.path(), out.path(), "runnable", HOST, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(walk_has(out.path(), "user-obj"), "the vendor sources were compiled");
    // A header nobody knows is refused too, and a missing include folder is named.
    let dir = written(&derived::calling_vendor(derived::digits_aot_c(), "acme_kernels.h", "acme_check"));
    let why = refusals(&read(dir.path()), HOST, &UserLibraries::default()).join("\n");
    assert!(why.contains("<acme_kernels.h>") && why.contains("not in the archive"), "{why}");
    let (e, _) = build_error(dir.path(), mlf_build::Model::open(dir.path()).include_dir("/no/such/folder"), HOST);
    assert!(e.contains("acme_kernels.h"), "{e}");
}

#[test]
fn an_accelerator_archive_is_read_and_refused_everywhere() {
    let mut m = derived::digits_aot_c();
    mlf_fixtures::edit_member(&mut m, derived::HEADER, |t| {
        mlf_fixtures::replace_once(
            t,
            "int32_t tvmgen_default_run(",
            "struct tvmgen_default_devices {\n  void* ethos_u;\n};\nint32_t tvmgen_default_run(",
        )
    });
    mlf_fixtures::edit_member(&mut m, "codegen/host/src/default_lib0.c", |t| {
        mlf_fixtures::replace_once(
            t,
            "struct tvmgen_default_outputs* outputs) {",
            "struct tvmgen_default_outputs* outputs,struct tvmgen_default_devices* devices) {",
        )
    });
    let m = derived::calling_vendor(m, "tvm_ethosu_runtime.h", "TVMEthosULaunch");
    let dir = written(&m);
    let d = read(dir.path());
    for t in TARGETS {
        let why = refusals(&d, t, &UserLibraries::default()).join("\n");
        assert!(why.contains("devices") && why.contains("Ethos-U"), "{t}: {why}");
    }
}
