//! `cargo mlf run` on Relax exports (TVM 0.27 `export_library` output, `fixtures/relax`): built
//! as a user's crate is (generated build.rs + `include_model!`) and run on the reference inputs,
//! on this computer and on emulated devices (a Cortex-M4F and RV64, one case of one export each
//! to keep CI short); exports that cannot be static are refused with one error naming the cause.
//!
//! Every runnable C export on this computer (a few minutes):
//! `cargo test -p cargo-mlf --test run_relax -- --ignored`.

use std::path::PathBuf;
use std::process::Command;

use device_tests::programs::{RISCV64, THUMBV6M, THUMBV7EM};
use device_tests::tools::{self, Need};
use mlf_fixtures::{Manifest, compare};

mod common;

fn relax(name: &str) -> (PathBuf, PathBuf) {
    let dir = mlf_fixtures::workspace_root().join("fixtures/relax").join(name);
    (dir.join("model.tar"), dir)
}

#[test]
fn c_exports_reproduce_their_vectors() {
    // edges-c: scalar and bool inputs and outputs, nested tuples, outputs that are an input or
    // a constant (copied into the arena after the last call).
    for name in ["mlp-f32-fused-c", "int8cnn-c", "views-fused-c", "edges-c"] {
        let (model, dir) = relax(name);
        assert_eq!(common::run_cases(&model, &dir), 3, "{name}");
    }
}

#[test]
#[ignore = "a few minutes: cargo test -p cargo-mlf --test run_relax -- --ignored"]
fn every_c_export_reproduces_its_vectors() {
    let root = mlf_fixtures::workspace_root().join("fixtures/relax");
    let mut n = 0;
    for e in std::fs::read_dir(root).unwrap() {
        let dir = e.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.join("vectors").is_dir() || name.contains("-llvm-") {
            continue;
        }
        assert_eq!(common::run_cases(&dir.join("model.tar"), &dir), 3, "{name}");
        n += 1;
    }
    assert_eq!(n, 13);
}

/// Runs case 0 of export `name` on `target`; returns the device's stderr.
fn on_device(name: &str, target: &str) -> String {
    let (model, dir) = relax(name);
    let manifest = Manifest::read(&dir).unwrap();
    let case = &manifest.cases[0];
    let out = common::work_dir().join("out-relax-device").join(format!("{name}-{target}"));
    let _ = std::fs::remove_dir_all(&out);
    let o = common::run_command(&model, &dir, case, &out, &common::work_dir())
        .arg("--target")
        .arg(target)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{name} on {target}:\n{stderr}");
    for (k, want) in case.outputs.iter().enumerate() {
        let got = std::fs::read(common::output_file(&stderr, k)).unwrap();
        let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
        compare(&want.dtype, &got, &expected, case).unwrap_or_else(|e| panic!("{name} on {target}: output {k}: {e}"));
    }
    assert!(stderr.contains("instructions per inference") && stderr.contains("STACK_BYTES"), "{stderr}");
    stderr
}

#[test]
fn integer_cnn_on_cortex_m4() {
    let needs = [Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc];
    if !tools::require("relax integer_cnn_on_cortex_m4", &needs) {
        return;
    }
    on_device("int8cnn-fused-c", THUMBV7EM);
}

#[test]
fn two_inputs_and_views_on_rv64() {
    if !tools::require("relax two_inputs_and_views_on_rv64", &[Need::Target(RISCV64), Need::QemuRiscv, Need::RiscvGcc])
    {
        return;
    }
    on_device("views-fused-c", RISCV64);
}

/// An LLVM object for this computer (x86-64) whose kernels take scratch memory, on the host:
/// sizes read from its machine code, every case reproduced.
#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn llvm_object_with_scratch_on_the_host() {
    let (model, dir) = relax("cnn-f32-fused-llvm-x86_64");
    assert_eq!(common::run_cases(&model, &dir), 3);
}

/// An LLVM object (`lib0.o`, position-independent) linked into a Cortex-M4F program: a fused
/// CNN whose kernels take scratch memory through the slot `__TVMBackendAllocWorkspace`, with the
/// sizes mlf reads from their machine code (1,152 and 4,608 bytes, as the C export states).
#[test]
fn llvm_object_on_cortex_m4() {
    let needs = [Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc];
    if !tools::require("relax llvm_object_on_cortex_m4", &needs) {
        return;
    }
    on_device("cnn-f32-fused-llvm-thumbv7em", THUMBV7EM);
}

/// The same CNN as a Cortex-M0+ (Thumb-1) object on the M0+: sizes built from 8-bit immediates
/// (`movs` + `lsls`), the allocation tested with `cmp` + `bne`.
#[test]
#[ignore = "a device build: cargo test -p cargo-mlf --test run_relax -- --ignored"]
fn llvm_object_on_cortex_m0plus() {
    let needs = [Need::Target(THUMBV6M), Need::QemuArm, Need::ArmGcc];
    if !tools::require("relax llvm_object_on_cortex_m0plus", &needs) {
        return;
    }
    on_device("cnn-f32-fused-llvm-thumbv6m", THUMBV6M);
}

#[test]
#[ignore = "a device build: cargo test -p cargo-mlf --test run_relax -- --ignored"]
fn llvm_object_on_rv64() {
    if !tools::require("relax llvm_object_on_rv64", &[Need::Target(RISCV64), Need::QemuRiscv, Need::RiscvGcc]) {
        return;
    }
    on_device("mlp-f32-fused-llvm-rv64", RISCV64);
    // Kernels with scratch, read from RISC-V machine code.
    on_device("onnx-cnn-fused-llvm-rv64", RISCV64);
}

/// Every export of `fixtures/relax` with vectors on the emulated device it was built for: the
/// C exports on the Cortex-M4F and RV64, the LLVM objects on their own target (those whose
/// kernels take scratch memory included).
#[test]
#[ignore = "about 25 device builds: cargo test -p cargo-mlf --test run_relax -- --ignored"]
fn every_export_on_the_emulated_devices() {
    let needs = [
        Need::Target(THUMBV7EM),
        Need::Target(THUMBV6M),
        Need::QemuArm,
        Need::ArmGcc,
        Need::Target(RISCV64),
        Need::QemuRiscv,
        Need::RiscvGcc,
    ];
    if !tools::require("relax every_export_on_the_emulated_devices", &needs) {
        return;
    }
    let root = mlf_fixtures::workspace_root().join("fixtures/relax");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("vectors").is_dir())
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut ran = 0;
    for name in &names {
        if name.ends_with("-llvm-x86_64") {
            // The host's own objects: on the host (an x86-64 Linux one).
            if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
                let (model, dir) = relax(name);
                assert_eq!(common::run_cases(&model, &dir), 3, "{name}");
                ran += 1;
            }
            continue;
        }
        let targets: &[&str] = if name.ends_with("-llvm-thumbv7em") {
            &[THUMBV7EM]
        } else if name.ends_with("-llvm-thumbv6m") {
            &[THUMBV6M]
        } else if name.ends_with("-llvm-rv64") {
            &[RISCV64]
        } else {
            &[THUMBV7EM, RISCV64]
        };
        for target in targets {
            on_device(name, target);
            ran += 1;
        }
    }
    let host = usize::from(cfg!(all(target_arch = "x86_64", target_os = "linux")));
    assert_eq!(ran, 32 + host, "{names:?}");
}

/// An export that cannot be static: one error, naming the cause and the file.
fn refused(name: &str) -> String {
    let (model, _) = relax(name);
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "run"])
        .arg(&model)
        .args(["--fill", "zeros", "--build-dir"])
        .arg(common::work_dir())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let msg = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(msg.matches("error").count(), 1, "{msg}");
    assert!(msg.contains(name), "{msg}");
    msg
}

#[test]
fn symbolic_shapes_and_compiled_mode_are_refused_naming_the_cause() {
    let msg = refused("refuse-symbolic-shape-c");
    assert!(msg.contains("symbolic shape") && msg.contains("alloc_shape_heap"), "{msg}");
    let msg = refused("refuse-compiled-mode-c");
    assert!(msg.contains("exec_mode=\"compiled\""), "{msg}");
}
