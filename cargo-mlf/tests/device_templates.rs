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

/// `cargo mlf new DIR --mlf-path <this checkout> [more]` (the crate is named after `DIR`).
fn new_crate(dir: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "new"])
        .arg(dir)
        .args(more)
        .arg("--mlf-path")
        .arg(mlf_fixtures::workspace_root())
        .output()
        .unwrap()
}

/// The PATH with the cargo-mlf under test first (the templates' runner is `cargo mlf qemu`) and
/// not QEMU's folder: the runner finds QEMU by itself, in `.qemu/bin` of this checkout.
fn path_with_cargo_mlf() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_cargo-mlf")).parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).unwrap()
}

/// `cargo run` in `dir`, as its user types it, with cargo-mlf on the PATH and the device tests'
/// shared target folder.
fn cargo_run(dir: &Path) -> Output {
    cargo_run_with(dir, &[])
}

/// [`cargo_run`] with more arguments (`--features profile`).
fn cargo_run_with(dir: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(tools::cargo());
    cmd.arg("run")
        .args(extra)
        .current_dir(dir)
        .env("PATH", path_with_cargo_mlf())
        .env("CARGO_TARGET_DIR", tools::target_dir());
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
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    assert!(config.contains("target = \"thumbv7em-none-eabihf\"") && config.contains("-Tlink.x"), "{config}");
    assert!(dir.join("memory.x").is_file() && dir.join("README.md").is_file());

    let run = cargo_run(&dir);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));
    let stdout = text(&run.stdout);
    // The bundled model's reference vector (case 0, a 2) runs and matches its reference.
    assert!(dir.join("vectors/case0_in_pixels.bin").is_file() && dir.join("vectors/case0_out_0.bin").is_file());
    assert!(
        stdout.starts_with("digits_fw: output output matches the reference (case 0; worst difference "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ndigits_fw: ran from static memory (176 bytes of arena); largest output at index 2\n"),
        "{stdout}"
    );
    // A reference the output does not match fails the run, saying so.
    let reference = dir.join("vectors/case0_out_0.bin");
    let mut wrong = std::fs::read(&reference).unwrap();
    wrong[8..12].copy_from_slice(&0.5f32.to_le_bytes());
    std::fs::write(&reference, wrong).unwrap();
    let run = cargo_run(&dir);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", text(&run.stdout), text(&run.stderr));
    assert!(text(&run.stdout).contains("digits_fw: output output DIFFERS from the reference"), "{}", text(&run.stdout));

    // A panic prints where it happened and ends QEMU with a failure status.
    let main_rs = dir.join("src/main.rs");
    let main = std::fs::read_to_string(&main_rs).unwrap();
    let take = "    let mut model = digits_fw::Model::take()";
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
    let out = new_crate(&dir, &["--template", "k210", "--model", model.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    assert!(config.contains("riscv64gc-unknown-none-elf") && config.contains("-Tmemory.x"), "{config}");
    let run = cargo_run(&dir);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));
    // The fixture's reference vector (vectors/ beside the model) runs and matches.
    let stdout = text(&run.stdout);
    assert!(stdout.contains("iris_k210: output ") && stdout.contains(" matches the reference (case 0;"), "{stdout}");
    assert!(stdout.contains("\niris_k210: ran from static memory ("), "{stdout}");
}

#[test]
fn k210_template_needs_a_kmodel() {
    let tmp = tempfile::tempdir().unwrap();
    let out = new_crate(&tmp.path().join("x"), &["--template", "k210"]);
    assert!(!out.status.success() && text(&out.stderr).contains("--model PATH.kmodel"), "{}", text(&out.stderr));
    let digits = mlf_fixtures::digits_tar();
    let out = new_crate(&tmp.path().join("y"), &["--template", "k210", "--model", digits.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out.stderr).contains("runs kmodels"), "{}", text(&out.stderr));
    assert!(!tmp.path().join("y").exists(), "nothing is written when the model does not fit the template");
}

/// `cargo mlf build` in `dir`, as its user types it (the crate's `.cargo/config.toml` applies).
fn mlf_build_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
    cmd.args(["mlf", "build"]).args(args).current_dir(dir).env("CARGO_TARGET_DIR", tools::target_dir());
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET"] {
        cmd.env_remove(var);
    }
    cmd.output().unwrap()
}

/// Sets `board = …` in the crate's `[package.metadata.mlf]` table.
fn set_board(dir: &Path, board: &str) {
    let path = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    let table = "[package.metadata.mlf]\n";
    let start = toml.find(table).unwrap() + table.len();
    let rest = &toml[start..];
    let rest = if rest.starts_with("board = ") { &rest[rest.find('\n').unwrap() + 1..] } else { rest };
    std::fs::write(&path, format!("{}board = {board}\n{rest}", &toml[..start])).unwrap();
}

/// The firmware crate's `.cargo/config.toml` sets `build.target`: `cargo mlf build` checks and
/// reports for thumbv7em-none-eabihf (the model's C compiled by arm-none-eabi-gcc), and after
/// `cargo build` measures the linked firmware; a board smaller than the firmware fails naming
/// both numbers, a board smaller than the models fails before cargo runs.
#[test]
fn firmware_crate_is_checked_for_its_configured_target_and_must_fit_its_board() {
    let test = "firmware_crate_is_checked_for_its_configured_target";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("board-fw");
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = mlf_build_in(&dir, &["--check-only", "--message-format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    let model: serde_json::Value = serde_json::from_str(report.lines().next().unwrap()).unwrap();
    assert_eq!(model["target"], THUMBV7EM, "{report}");
    // The C measured is the Arm code (Thumb-2 is smaller than x86-64's 620 bytes).
    let code = model["flash"]["code"].as_u64().unwrap();
    assert!(code > 0 && code < 620, "{report}");
    let human = mlf_build_in(&dir, &["--check-only"]);
    let config = dir.join(".cargo/config.toml").canonicalize().unwrap();
    let want = format!("for {THUMBV7EM} (build.target in {})", config.display());
    assert!(text(&human.stderr).contains(&want), "{}", text(&human.stderr));

    // The whole firmware against the board, after cargo build.
    set_board(&dir, r#"{ flash = "16 KiB", ram = "320 KiB" }"#);
    let out = mlf_build_in(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("firmware board-fw (thumbv7em-none-eabihf"), "{stderr}");
    assert!(stderr.contains("of flash, over the budget of 16384 bytes (16.0 KiB)"), "{stderr}");
    assert!(stderr.contains("budget `flash` set in package.metadata.mlf.board in"), "{stderr}");

    // A board that fits: the figures as JSON.
    set_board(&dir, r#"{ flash = "1 MiB", ram = "320 KiB" }"#);
    let out = mlf_build_in(&dir, &["--message-format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let fw = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["reason"] == "mlf-firmware-report")
        .unwrap_or_else(|| panic!("no mlf-firmware-report in {stdout}"));
    let (flash, ram) = (fw["flash"].as_u64().unwrap(), fw["ram"].as_u64().unwrap());
    assert!(flash > 16 * 1024 && flash < 1 << 20 && ram >= 176, "{fw}");
    assert_eq!((fw["target"].as_str(), fw["within_budget"].as_bool()), (Some(THUMBV7EM), Some(true)), "{fw}");
    // cargo's own JSON lines are passed on.
    assert!(stdout.contains("\"reason\":\"compiler-artifact\""), "{stdout}");

    // A board smaller than the models: refused before cargo builds anything.
    set_board(&dir, r#"{ ram = "100 B" }"#);
    let out = mlf_build_in(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success() && stderr.contains("over the budget of 100 bytes"), "{stderr}");
    assert!(stderr.contains("not running cargo build"), "{stderr}");
}

/// `cargo mlf build --message-format json` in `dir`: the model's report and the linked
/// firmware's.
fn model_and_firmware_reports(dir: &Path) -> (serde_json::Value, serde_json::Value) {
    let out = mlf_build_in(dir, &["--message-format", "json"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<serde_json::Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let find = |reason: &str| {
        let found = lines.iter().find(|v| v["reason"] == reason);
        found.cloned().unwrap_or_else(|| panic!("no {reason} in {stdout}"))
    };
    (find("mlf-model-report"), find("mlf-firmware-report"))
}

/// A k210 crate switched to the K210's own KPU as its README says (mlf-runtime's feature
/// `k210`, `include_model!(…, kpu = k210)`, `kpu = "k210"` in the manifest) builds and links for
/// riscv64gc (QEMU cannot run it: it has no KPU). Its module allocates no KPU RAM: the report's
/// arena and the linked firmware's RAM both drop by at least the emulated KPU RAM and scratch
/// against the same crate on the device model.
#[test]
fn k210_template_on_the_k210_kpu_links_for_riscv64gc_without_kpu_ram() {
    if !tools::require("k210_template_on_the_k210_kpu_links", &[Need::Target(RISCV64)]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A V4 model with a KPU convolution (512 bytes of KPU RAM, 160 of main memory).
    let model = tmp.path().join("net.kmodel");
    std::fs::write(&model, mlf_fixtures::kmodel_synth::v4_conv().0).unwrap();
    let dir = tmp.path().join("net-k210");
    let out = new_crate(&dir, &["--template", "k210", "--model", model.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (emulated, emulated_fw) = model_and_firmware_reports(&dir);

    let edit = |file: &str, from: &str, to: &str| {
        let path = dir.join(file);
        let was = std::fs::read_to_string(&path).unwrap();
        assert!(was.contains(from), "{file} has no {from:?}:\n{was}");
        std::fs::write(&path, was.replacen(from, to, 1)).unwrap();
    };
    edit("Cargo.toml", r#"features = ["macros"]"#, r#"features = ["macros", "k210"]"#);
    edit("Cargo.toml", r#"# kpu = "k210""#, r#"kpu = "k210""#);
    edit(
        "src/main.rs",
        r#"include_model!("models/net.kmodel", name = net_k210)"#,
        r#"include_model!("models/net.kmodel", name = net_k210, kpu = k210)"#,
    );
    let (k210, k210_fw) = model_and_firmware_reports(&dir);

    let notes = k210["notes"].to_string();
    assert!(notes.contains("K210's own KPU") && notes.contains("no KPU RAM"), "{k210}");
    let arena = |r: &serde_json::Value| r["ram"]["arena"].as_u64().unwrap();
    // Emulated: main 160 + KPU RAM 512 + scratch; on the K210: main 160 + CPU scratch 0.
    assert!(arena(&emulated) >= arena(&k210) + 512, "{emulated}\n{k210}");
    assert_eq!(k210_fw["target"], RISCV64, "{k210_fw}");
    let ram = |r: &serde_json::Value| r["ram"].as_u64().unwrap();
    assert!(ram(&emulated_fw) >= ram(&k210_fw) + 512, "{emulated_fw}\n{k210_fw}");
    // The KPU driver is linked in: its code makes the program larger.
    let flash = |r: &serde_json::Value| r["flash"].as_u64().unwrap();
    assert!(flash(&k210_fw) > 0, "{k210_fw}");
}

/// `cargo run --features profile` in the firmware crate: the cycle-counter hook prints one line
/// per operator (QEMU does not model DWT CYCCNT, so the cycles read 0 there) and the model still
/// reproduces its reference.
#[test]
fn firmware_template_profile_feature_prints_one_line_per_operator() {
    let test = "firmware_template_profile_feature";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("digits-fw");
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = cargo_run_with(&dir, &["--features", "profile"]);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));
    let stdout = text(&run.stdout);
    let ops: Vec<&str> = stdout.lines().filter(|l| l.starts_with("operator ")).collect();
    assert_eq!(ops.len(), 3, "{stdout}");
    assert!(ops[0].starts_with("operator 0 Cpu tvmgen_default_fused_") && ops[0].ends_with(" cycles"), "{stdout}");
    assert!(stdout.contains("largest output at index 2"), "{stdout}");
}

/// Issue 28: the firmware crate's `memory.x` regions against the linked ELF. Each region's use
/// (sections measured from the ELF, plus mlf's stack bound for `run()` and the declared
/// application stack in `RAM`) is reported before (bounds from the models) and after the link;
/// with `RAM` one byte shorter than that use, `cargo mlf build` fails naming the region, its
/// items and the byte over; at exactly its use it passes.
#[test]
fn firmware_regions_from_memory_x_and_one_byte_over_fails() {
    let test = "firmware_regions_from_memory_x";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("regions-fw");
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    set_board(&dir, r#"{ stack = "2 KiB" }"#);
    let (_, fw) = model_and_firmware_reports(&dir);
    let regions = fw["regions"].as_array().unwrap_or_else(|| panic!("no regions: {fw}"));
    let ram = regions.iter().find(|r| r["name"] == "RAM").unwrap_or_else(|| panic!("{fw}"));
    let flash = regions.iter().find(|r| r["name"] == "FLASH").unwrap_or_else(|| panic!("{fw}"));
    let used = ram["used"].as_u64().unwrap();
    let stack = ram["models_stack"].as_u64().unwrap();
    assert_eq!(ram["app_stack"], 2048, "{fw}");
    assert!(stack > 0 && used > stack + 2048 && flash["used"].as_u64().unwrap() > 10_000, "{fw}");
    assert!(ram["sections"].as_array().unwrap().iter().any(|s| s[0] == ".bss"), "{fw}");

    // cortex-m-rt wants RAM's length a multiple of 8: RAM set to the use rounded up to one, and
    // the application's stack grown to fill it, and then by one byte more.
    let memory_x = dir.join("memory.x");
    let script = std::fs::read_to_string(&memory_x).unwrap();
    let length = used.div_ceil(8) * 8;
    let ram_line = format!("RAM : ORIGIN = 0x20000000, LENGTH = {length}");
    std::fs::write(&memory_x, script.replace("RAM : ORIGIN = 0x20000000, LENGTH = 4M", &ram_line)).unwrap();
    let app = 2048 + (length - used) + 1;
    set_board(&dir, &format!("{{ stack = {app} }}"));
    let out = mlf_build_in(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("region RAM") && stderr.contains("before the link (bounds from the models)"), "{stderr}");
    let want = format!("region RAM ({length} bytes at 0x20000000) is over by 1 bytes: {} bytes of .", length + 1);
    assert!(stderr.contains(&want), "{want}\nnot in\n{stderr}");
    let items = format!("stack of run() {stack} (mlf's bound), application stack {app} (declared)");
    assert!(stderr.contains(&items), "{items}\nnot in\n{stderr}");
    set_board(&dir, &format!("{{ stack = {} }}", app - 1));
    let out = mlf_build_in(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A model's arena placed by `arena_section = ".psram"` in its `[package.metadata.mlf]` entry, the
/// crate's `memory.x` putting `.psram` in a second RAM region: before the link `cargo mlf build`
/// counts the arena in that region (not in `RAM`), and after the link the ELF has it there.
#[test]
fn firmware_regions_count_an_arena_in_the_region_its_section_goes_to() {
    let test = "firmware_regions_arena_section";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("placed-fw");
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let memory_x = dir.join("memory.x");
    let script = std::fs::read_to_string(&memory_x).unwrap().replace(
        "RAM : ORIGIN = 0x20000000, LENGTH = 4M",
        "RAM : ORIGIN = 0x20000000, LENGTH = 4M\n  PSRAM : ORIGIN = 0x21000000, LENGTH = 16M",
    );
    let psram = "SECTIONS\n{\n  .psram (NOLOAD) : ALIGN(16)\n  {\n    *(.psram .psram.*);\n  } > PSRAM\n}\nINSERT AFTER .bss;\n";
    std::fs::write(&memory_x, script + psram).unwrap();
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let entry = "[[package.metadata.mlf.models]]\n";
    std::fs::write(dir.join("Cargo.toml"), toml.replace(entry, &format!("{entry}arena_section = \".psram\"\n")))
        .unwrap();
    let (model, fw) = model_and_firmware_reports(&dir);
    let (arena, name) = (model["ram"]["arena"].as_u64().unwrap(), model["model"].as_str().unwrap());
    assert_eq!(model["arena_section"], ".psram", "{model}");
    let regions = fw["regions"].as_array().unwrap_or_else(|| panic!("no regions: {fw}"));
    let region = |n: &str| regions.iter().find(|r| r["name"] == n).unwrap_or_else(|| panic!("no {n}: {fw}"));
    let psram_sections = region("PSRAM")["sections"].as_array().unwrap().clone();
    // The arena static, padded to its 64-byte alignment.
    let in_psram = |s: &serde_json::Value| s[0] == ".psram" && (arena..arena + 64).contains(&s[1].as_u64().unwrap());
    assert!(psram_sections.iter().any(in_psram), "{fw}");
    assert!(!region("RAM")["sections"].as_array().unwrap().iter().any(|s| s[0] == ".psram"), "{fw}");
    let out = mlf_build_in(&dir, &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let before = format!(
        "region PSRAM          {arena} of 16777216 bytes before the link (bounds from the models): arena of {name} (.psram) {arena}"
    );
    assert!(stderr.contains(&before), "{before}\nnot in\n{stderr}");
}

/// The Rust that runs Relax export `fixtures/relax/{dir}` as module `module` on case 0 and exits
/// with failure unless every element of output 0 is within `tol` of the reference.
fn relax_run(module: &str, dir: &str, input: &str, t: &str, n_in: usize, n_out: usize, tol: f32) -> String {
    let v = mlf_fixtures::workspace_root().join("fixtures/relax").join(dir).join("vectors");
    let file = |f: &str| v.join(f).display().to_string();
    let (inp, out) = (file(&format!("case0_in_{input}.bin")), file("case0_out_0.bin"));
    format!(
        "mlf_runtime::include_model!(\"{m}\", name = {module});\n\
         fn run_{module}() {{\n\
         \x20   static IN: [{t}; {n_in}] = le_array!({t}, {n_in}, \"{inp}\");\n\
         \x20   static WANT: [{t}; {n_out}] = le_array!({t}, {n_out}, \"{out}\");\n\
         \x20   let mut model = {module}::Model::take().expect(\"the model\");\n\
         \x20   let out = model.run(&{module}::Inputs {{ {input}: &IN }}).expect(\"a run\");\n\
         \x20   let ok = out.output0.iter().zip(&WANT).all(|(g, w)| (*g as f32 - *w as f32).abs() <= {tol:?});\n\
         \x20   println!(\"{module}: {{}}\", if ok {{ \"matches the reference\" }} else {{ \"DIFFERS\" }});\n\
         \x20   if !ok {{ process::exit(1) }}\n\
         }}\n",
        m = mlf_fixtures::workspace_root().join("fixtures/relax").join(dir).join("model.tar").display(),
    )
}

/// Issue 24: two Relax exports (a float MLP, an int8 CNN) and an MLF model (digits) linked into
/// one Cortex-M4F firmware, each reproducing its reference vector under QEMU.
#[test]
fn two_relax_exports_and_an_mlf_model_in_one_firmware() {
    let test = "two_relax_exports_and_an_mlf_model_in_one_firmware";
    if !tools::require(test, &[Need::Target(THUMBV7EM), Need::QemuArm, Need::ArmGcc]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("three");
    let out = new_crate(&dir, &["--template", "firmware"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let root = mlf_fixtures::workspace_root().join("fixtures/relax");
    let mut toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    for (name, fixture) in [("mlp", "mlp-f32-fused-c"), ("cnn", "int8cnn-fused-c")] {
        let path = root.join(fixture).join("model.tar");
        toml.push_str(&format!(
            "\n[[package.metadata.mlf.models]]\npath = \"{}\"\nname = \"{name}\"\n",
            path.display()
        ));
    }
    std::fs::write(dir.join("Cargo.toml"), toml).unwrap();
    let main_rs = dir.join("src/main.rs");
    let main = std::fs::read_to_string(&main_rs).unwrap();
    let relax = relax_run("mlp", "mlp-f32-fused-c", "pixels", "f32", 64, 10, 1e-5)
        + &relax_run("cnn", "int8cnn-fused-c", "image", "i8", 64, 5, 0.0);
    let main = main.replacen("#[entry]", &format!("{relax}\n#[entry]"), 1).replacen(
        "    match infer() {",
        "    run_mlp();\n    run_cnn();\n    match infer() {",
        1,
    );
    std::fs::write(&main_rs, main).unwrap();
    let run = cargo_run(&dir);
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", text(&run.stderr));
    assert!(stdout.starts_with("mlp: matches the reference\ncnn: matches the reference\n"), "{stdout}");
    assert!(stdout.contains("three: output output matches the reference (case 0;"), "{stdout}");
}
