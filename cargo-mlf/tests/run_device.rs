//! `cargo mlf run --target TRIPLE` runs a model on an emulated device (QEMU) with the same
//! inputs and output files as on this computer, and reports instructions per inference and the
//! stack high-water. Representative MLF fixtures on a Cortex-M4F (graph, AOT, USMP, two inputs
//! and outputs, external parameters), the digits model on a Cortex-M3 and a Cortex-M0, and a
//! kmodel on RV64. Without QEMU, a Rust target or arm-none-eabi-gcc these are skipped with one
//! line (`.ci/device-tools` installs them); with `CI=true` they fail.
//!
//! Every runnable MLF fixture on the Cortex-M4F (a few minutes):
//! `cargo test -p cargo-mlf --test run_device -- --ignored --nocapture`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use device_tests::programs::{RISCV64, THUMBV6M, THUMBV7EM};
use device_tests::tools::{self, Need};
use mlf_fixtures::{Manifest, compare, mlf_fixtures};

mod common;

const THUMBV7M: &str = "thumbv7m-none-eabi";

fn work_dir() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-tests")
}

/// What the device printed for the last case, and how many outputs of all cases were
/// bit-identical to the reference (the others were within the fixture's tolerance).
#[derive(Debug)]
struct Figures {
    instructions: u64,
    stack: u64,
    /// The module's `STACK_BYTES` (TVM modules).
    stated_stack: Option<u64>,
    first_run: Option<u64>,
    exact_outputs: usize,
    outputs: usize,
}

/// The number after `label` on a line of `stderr` (digits with `,` separators).
fn figure(stderr: &str, label: &str) -> Option<u64> {
    let line = stderr.lines().find(|l| l.trim_start().starts_with(label))?;
    grouped(&line.trim_start()[label.len()..])
}

/// The number (digits with `,` separators) at the start of `s`, after blanks.
fn grouped(s: &str) -> Option<u64> {
    let digits: String =
        s.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| *c != ',').collect();
    digits.parse().ok()
}

/// Runs every case of the manifest in `dir` on `target` (at most `limit` cases) and checks each
/// output against its reference; returns the figures of the last case.
fn run_cases(model: &Path, dir: &Path, target: &str, extra: &[&OsStr], limit: usize) -> (usize, Figures) {
    let manifest = Manifest::read(dir).expect("manifest");
    let mut last = None;
    let (mut cases, mut exact_outputs, mut outputs) = (0, 0, 0);
    for (ci, case) in manifest.cases.iter().enumerate().take(limit) {
        let tag: String = extra.iter().map(|a| a.to_string_lossy().replace(['/', '-'], "")).collect();
        let out = work_dir().join("out-device").join(format!(
            "{}-{}-{target}-{tag}-{ci}",
            dir.file_name().unwrap().to_string_lossy(),
            model.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&out);
        let o = common::run_command(model, dir, case, &out, &work_dir())
            .arg("--target")
            .arg(target)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{} on {target}, case {ci}:\n{stderr}", model.display());
        for (k, want) in case.outputs.iter().enumerate() {
            let got = std::fs::read(common::output_file(&stderr, k)).unwrap();
            let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
            compare(&want.dtype, &got, &expected, case)
                .unwrap_or_else(|e| panic!("{} on {target}: case {ci} output {k}: {e}\n{stderr}", model.display()));
            exact_outputs += usize::from(got == expected);
            outputs += 1;
        }
        let stated_stack = stderr.split("the module states STACK_BYTES = ").nth(1).map(|s| grouped(s).expect(&stderr));
        let figures = Figures {
            instructions: figure(&stderr, "instructions per inference").expect(&stderr),
            stack: figure(&stderr, "stack high-water").expect(&stderr),
            stated_stack,
            first_run: figure(&stderr, "first run"),
            exact_outputs,
            outputs,
        };
        assert!(figures.instructions > 0 && figures.stack > 0, "{figures:?}\n{stderr}");
        // Every module states its stack (a run deeper than that already failed the command).
        let stated = figures.stated_stack.expect(&stderr);
        assert!(figures.stack <= stated, "stack {} > stated {stated}\n{stderr}", figures.stack);
        assert!(stderr.contains("program") && stderr.contains("flash"), "{stderr}");
        last = Some(figures);
        cases += 1;
    }
    (cases, last.expect("at least one case"))
}

fn arm(test: &str, target: &'static str, fixtures: bool) -> bool {
    let mut needs = vec![Need::Target(target), Need::QemuArm, Need::ArmGcc];
    if fixtures {
        needs.push(Need::Fixtures);
    }
    tools::require(test, &needs)
}

fn digits() -> (PathBuf, PathBuf) {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    (dir.join("digits.tar"), dir)
}

#[test]
fn digits_on_cortex_m4_reproduces_the_vectors_with_instructions_and_stack() {
    if !arm("digits_on_cortex_m4", THUMBV7EM, false) {
        return;
    }
    let (model, dir) = digits();
    let (cases, f) = run_cases(&model, &dir, THUMBV7EM, &[], usize::MAX);
    assert_eq!(cases, 10);
    // SysTick counts 40 instructions per tick on the MPS2 board.
    assert!((10_000..200_000).contains(&f.instructions) && f.instructions % 40 == 0, "{f:?}");
    assert!(f.first_run.is_none(), "a TVM model has no separate first run: {f:?}");
}

#[test]
fn aot_usmp_and_two_input_fixtures_on_cortex_m4() {
    if !arm("aot_usmp_and_two_input_fixtures_on_cortex_m4", THUMBV7EM, true) {
        return;
    }
    let root = mlf_fixtures::fixtures_dir().unwrap();
    for name in ["digits-mlp-aot-c", "kws-int8-aot-usmp", "multi-io-graph"] {
        let dir = root.join("mlf").join(name);
        let (cases, f) = run_cases(&dir.join("model.tar"), &dir, THUMBV7EM, &[], usize::MAX);
        eprintln!("{name} on {THUMBV7EM}: {cases} cases, {f:?}");
    }
}

/// `--params resident` (a fresh split, packed and written into the flash partition),
/// `--params streamed --from ARCHIVE` (an archive made by `cargo mlf split` + `pack`) and
/// `--params lazy --from ARCHIVE`.
#[test]
fn external_parameters_from_the_flash_partition_on_cortex_m4() {
    if !arm("external_parameters_on_cortex_m4", THUMBV7EM, false) {
        return;
    }
    let (model, dir) = digits();
    let bin = env!("CARGO_BIN_EXE_cargo-mlf");
    let t = tempfile::tempdir().unwrap();
    let (split, packed) = (t.path().join("split"), t.path().join("digits-params.tar"));
    let target = ["--target", THUMBV7EM];
    assert!(
        Command::new(bin)
            .args(["mlf", "split"])
            .arg(&model)
            .arg("-o")
            .arg(&split)
            .args(target)
            .status()
            .unwrap()
            .success()
    );
    assert!(Command::new(bin).args(["mlf", "pack"]).arg(&split).arg("-o").arg(&packed).status().unwrap().success());
    let resident: [&OsStr; 2] = ["--params".as_ref(), "resident".as_ref()];
    assert_eq!(run_cases(&model, &dir, THUMBV7EM, &resident, 3).0, 3);
    let streamed: [&OsStr; 4] = ["--params".as_ref(), "streamed".as_ref(), "--from".as_ref(), packed.as_os_str()];
    assert_eq!(run_cases(&model, &dir, THUMBV7EM, &streamed, 3).0, 3);
    let lazy: [&OsStr; 4] = ["--params".as_ref(), "lazy".as_ref(), "--from".as_ref(), packed.as_os_str()];
    assert_eq!(run_cases(&model, &dir, THUMBV7EM, &lazy, 3).0, 3);
}

#[test]
fn digits_on_cortex_m3_and_cortex_m0() {
    let (model, dir) = digits();
    for target in [THUMBV7M, THUMBV6M] {
        if !arm("digits_on_cortex_m3_and_cortex_m0", target, false) {
            return;
        }
        let (cases, f) = run_cases(&model, &dir, target, &[], 2);
        eprintln!("digits on {target}: {cases} cases, {f:?}");
    }
}

/// RV64 with the model's C (riscv64-unknown-elf-gcc): mlf-build asks for Rust's hard-float ABI.
#[test]
fn digits_on_rv64() {
    if !tools::require("digits_on_rv64", &[Need::Target(RISCV64), Need::QemuRiscv, Need::RiscvGcc]) {
        return;
    }
    let (model, dir) = digits();
    let (cases, f) = run_cases(&model, &dir, RISCV64, &[], 3);
    eprintln!("digits on {RISCV64}: {cases} cases, {f:?}");
}

#[test]
fn a_kmodel_on_rv64_reports_its_first_run_apart() {
    if !tools::require("a_kmodel_on_rv64", &[Need::Target(RISCV64), Need::QemuRiscv, Need::Fixtures]) {
        return;
    }
    let dir = mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v3-iris");
    let (_, f) = run_cases(&dir.join("iris.kmodel"), &dir, RISCV64, &[], 1);
    // minstret: exact to one instruction.
    assert!(f.first_run.is_some_and(|first| first > f.instructions), "{f:?}");
}

#[test]
fn the_micro_bit_has_no_parameter_partition_and_unknown_targets_are_named() {
    let (model, _) = digits();
    let bin = env!("CARGO_BIN_EXE_cargo-mlf");
    let run = |extra: &[&str]| {
        let o = Command::new(bin)
            .args(["mlf", "run"])
            .arg(&model)
            .args(extra)
            .arg("--build-dir")
            .arg(work_dir())
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let input = digits().1.join("vectors/case0_in_pixels.bin");
    let pixels = format!("pixels={}", input.display());
    let e = run(&["-i", &pixels, "--target", THUMBV6M, "--params", "resident"]);
    assert!(e.contains("no room for a parameter partition") && !e.contains("building"), "{e}");
    let e = run(&["-i", &pixels, "--target", "xtensa-esp32-none-elf"]);
    assert!(e.contains("cannot emulate xtensa-esp32-none-elf") && e.contains(THUMBV7EM), "{e}");
}

/// Every runnable MLF fixture (with vectors, without EXPECT.json) on the Cortex-M4F, every case;
/// prints a table (each fixture reproduced within its tolerance or the failure, how many outputs
/// were bit-identical) and fails if any did not reproduce.
#[test]
#[ignore = "a few minutes: cargo test -p cargo-mlf --test run_device -- --ignored --nocapture"]
fn every_runnable_mlf_fixture_on_cortex_m4() {
    if !arm("every_runnable_mlf_fixture_on_cortex_m4", THUMBV7EM, true) {
        return;
    }
    let root = mlf_fixtures::fixtures_dir().unwrap();
    let (mut lines, mut failed) = (Vec::new(), Vec::new());
    for fx in mlf_fixtures(&root) {
        if Manifest::read(&fx.dir).is_none() || fx.dir.join("EXPECT.json").exists() {
            continue;
        }
        let run = std::panic::catch_unwind(|| run_cases(&fx.model, &fx.dir, THUMBV7EM, &[], usize::MAX));
        match run {
            Ok((n, f)) => lines.push(format!(
                "| {} | {n} | {} of {} | {} | {} of {} |",
                fx.name,
                f.exact_outputs,
                f.outputs,
                f.instructions,
                f.stack,
                f.stated_stack.unwrap_or_default()
            )),
            Err(e) => {
                let why = e.downcast_ref::<String>().cloned().unwrap_or_default();
                let why = why.lines().next().unwrap_or("").to_string();
                lines.push(format!("| {} | FAILED: {why} | | | |", fx.name));
                failed.push(fx.name.clone());
            }
        }
    }
    eprintln!(
        "| fixture | cases reproduced | outputs bit-identical | instructions per inference (last case) | stack: painted high-water of the stated STACK_BYTES |\n|---|---:|---:|---:|---:|"
    );
    for l in &lines {
        eprintln!("{l}");
    }
    assert!(failed.is_empty(), "did not reproduce: {failed:?}");
    assert!(lines.len() >= 15, "{lines:?}");
}

/// The repository's digits archive `tar` (mlf-build's copies) with every C file but `keep`
/// compiled into objects by `compiler` with `flags` (kernels delivered as LLVM codegen
/// delivers them, for the device), written under `dir`.
fn with_objects(tar: &str, keep: &[&str], (compiler, flags): (&str, &[&str]), dir: &Path) -> PathBuf {
    let root = mlf_fixtures::workspace_root();
    let members = mlf_fixtures::tar_members(&root.join("mlf-build/tests/models").join(tar));
    let members = mlf_fixtures::derived::with_c_as_objects(members, compiler, flags, |name| {
        !keep.iter().any(|k| name.ends_with(k))
    });
    let out = dir.join(tar.trim_end_matches(".tar"));
    mlf_fixtures::write_members(&out, &members);
    out
}

/// Constants inside objects for the device as external parameters: the graph archive's kernels
/// as a Cortex-M4F object (relocations with their addends in the code: Arm `REL`) and the AOT
/// archive's main and kernels as an RV64 object (`RELA`, relaxed `auipc` pairs) reproduce the
/// vectors embedded, resident (from the flash partition), streamed and lazily loaded.
#[test]
fn constants_inside_objects_on_cortex_m4_and_rv64() {
    let arm_ok = arm("constants_inside_objects_on_cortex_m4", THUMBV7EM, false);
    let rv_ok =
        tools::require("constants_inside_objects_on_rv64", &[Need::Target(RISCV64), Need::QemuRiscv, Need::RiscvGcc]);
    let t = tempfile::tempdir().unwrap();
    let (_, dir) = digits();
    let arm_flags: &[&str] =
        &["-O2", "-ffp-contract=off", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"];
    let rv_flags: &[&str] =
        &["--specs=picolibc.specs", "-O2", "-ffp-contract=off", "-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany"];
    let mut runs = Vec::new();
    if arm_ok {
        runs.push((
            with_objects("digits-graph-linked.tar", &[], ("arm-none-eabi-gcc", arm_flags), t.path()),
            THUMBV7EM,
        ));
    }
    if rv_ok {
        let model =
            with_objects("digits-aot-c.tar", &["default_lib0.c"], ("riscv64-unknown-elf-gcc", rv_flags), t.path());
        runs.push((model, RISCV64));
    }
    for (model, target) in runs {
        for placement in ["embedded", "resident", "streamed", "lazy"] {
            let extra: [&OsStr; 2] = ["--params".as_ref(), placement.as_ref()];
            let (cases, f) = run_cases(&model, &dir, target, &extra, 3);
            assert_eq!(cases, 3);
            eprintln!("{} on {target}, {placement}: {f:?}", model.display());
        }
    }
}

/// `--profile` on the Cortex-M4F: one row per graph call, the dominant operator named, the
/// operators' sum within the run; the run without `--profile` (the program without the hook)
/// counts fewer instructions, by no more than the hook's cost.
#[test]
fn digits_profile_on_cortex_m4_has_one_row_per_operator() {
    if !arm("digits_profile_on_cortex_m4", THUMBV7EM, false) {
        return;
    }
    let (model, dir) = digits();
    let json = work_dir().join("digits-profile.json");
    let profiled: [&OsStr; 3] = ["--profile".as_ref(), "--profile-json".as_ref(), json.as_os_str()];
    let (_, on) = run_cases(&model, &dir, THUMBV7EM, &profiled, 1);
    let (_, off) = run_cases(&model, &dir, THUMBV7EM, &[], 1);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ops = doc["operators"].as_array().unwrap();
    assert_eq!(ops.len(), 3, "{doc}");
    assert!(ops.iter().all(|o| o["name"].as_str().unwrap().starts_with("tvmgen_default_fused_")), "{doc}");
    let sum: u64 = ops.iter().map(|o| o["instructions"].as_u64().unwrap()).sum();
    assert_eq!(doc["run_instructions"].as_u64(), Some(on.instructions));
    assert!(sum <= on.instructions && sum * 10 >= on.instructions * 9, "sum {sum} of {}", on.instructions);
    // The hook costs a few hundred instructions per run; without it the run is cheaper.
    assert!(off.instructions < on.instructions && on.instructions - off.instructions < 200 * 3, "{off:?} {on:?}");
}
