//! Relax exports (TVM 0.27) on the emulated Cortex-M4F, against the graph path on a model of the
//! same size (the digits MLP, 64-32-10, an MLF graph archive, beside `mlp-f32-fused-c`), each run
//! through `cargo mlf run --target thumbv7em-none-eabihf` exactly as a user would, once without
//! and once with `--profile`:
//!
//! - **instructions per inference** (QEMU `-icount`, the unprofiled program), **the kernels
//!   alone** (the profile's operators' sum less the hook's share inside each figure) and what
//!   the run spends **beyond the kernels** (the difference), in all and per kernel call (the
//!   profile's counter reads SysTick at 25 MHz under `-icount shift=0`: figures are exact to 40
//!   instructions);
//! - **flash** of the unprofiled program (the ELF's section table), and the share of it that is
//!   **the kernels' own argument checks**: for target `c` exports, the exported kernels' C
//!   (`lib0.c`) compiled alone with `arm-none-eabi-gcc -O2` (mlf's flags) as it is and with
//!   every TVM check taken out (the `if (!(…)) { … TVMFFIErrorSetRaisedFromCStrParts …; return
//!   -1; }` blocks: type indices, ndim, dtype, device, shape, strides, null pointers), the
//!   difference in code and read-only data. mlf's static tensors pass every check, so these
//!   bytes and their instructions are what TVM's calling convention costs on a device. (Not
//!   measured for LLVM objects: "-".)
//!
//! Exports are those of `fixtures/relax` (and of the folders in `MLF_RELAX_DIRS`, `:`-separated,
//! each holding export folders with `model.tar` and `vectors/`); `MLF_BENCH_ONLY=name,name`
//! measures only those. Run with `cargo bench -p cargo-mlf --bench relax_device` (a minute or
//! two per program for its first build); skips with one line without QEMU or the cross tools.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::Manifest;

#[path = "../tests/common/mod.rs"]
mod common;

const THUMBV7EM: &str = "thumbv7em-none-eabihf";

fn work() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-bench-relax")
}

/// One `cargo mlf run --target` of a model's first case.
struct Ran {
    instructions: u64,
    flash: u64,
    profile: Option<serde_json::Value>,
}

/// The first number after `label` on the stderr line that starts with it.
fn number_after(stderr: &str, label: &str) -> Option<u64> {
    let line = stderr.lines().map(str::trim_start).find_map(|l| l.strip_prefix(label))?;
    let digits: String = line
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn run(name: &str, model: &Path, dir: &Path, profile: bool) -> Result<Ran, String> {
    let manifest = Manifest::read(dir).ok_or("no manifest")?;
    let case = manifest.cases.first().ok_or("no case")?;
    let json = work().join(format!("{name}-profile.json"));
    let mut cmd = common::run_command(model, dir, case, &work().join("out").join(name), &work());
    cmd.args(["--target", THUMBV7EM]);
    if profile {
        cmd.arg("--profile").arg("--profile-json").arg(&json);
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed").to_string());
    }
    let instructions = number_after(&stderr, "instructions per inference").ok_or("no instruction count")?;
    let flash = number_after(&stderr, "program                     flash").ok_or("no flash figure")?;
    let profile = if profile {
        let text = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
        Some(serde_json::from_str(&text).map_err(|e| e.to_string())?)
    } else {
        None
    };
    Ok(Ran { instructions, flash, profile })
}

/// `lib0.c` with every TVM argument check taken out: the lines of each check's message and
/// error call, and the `return -1;` after the call (the `if` left empty, which the compiler
/// drops: its conditions only load).
fn without_checks(c: &str) -> String {
    let mut out = String::with_capacity(c.len());
    let mut after_call = false;
    for line in c.lines() {
        let t = line.trim();
        if after_call && t == "return -1;" {
            after_call = false;
            continue;
        }
        after_call = false;
        if t.contains("__tvm_assert_parts") {
            after_call = t.starts_with("TVMFFIErrorSetRaisedFromCStrParts");
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Code and read-only data of `c` compiled for the Cortex-M4F as mlf compiles a model's C.
fn object_bytes(c: &str, tag: &str) -> Result<u64, String> {
    use object::{Object, ObjectSection, SectionKind};
    let dir = work().join("checks");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (src, obj) = (dir.join(format!("{tag}.c")), dir.join(format!("{tag}.o")));
    std::fs::write(&src, c).map_err(|e| e.to_string())?;
    let include = mlf_fixtures::workspace_root().join("mlf-build/include");
    let status = Command::new("arm-none-eabi-gcc")
        .args(["-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"])
        .args(["-ffunction-sections", "-fdata-sections", "-ffp-contract=off", "-c"])
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .map_err(|e| format!("arm-none-eabi-gcc: {e}"))?;
    if !status.success() {
        return Err(format!("arm-none-eabi-gcc failed on {}", src.display()));
    }
    let bytes = std::fs::read(&obj).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
    Ok(file
        .sections()
        .filter(|s| matches!(s.kind(), SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString))
        .map(|s| s.size())
        .sum())
}

/// The kernels' object bytes with and without TVM's argument checks (target `c` exports).
fn checks(model: &Path) -> Option<(u64, u64)> {
    let raw = std::fs::read(model).ok()?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut v).ok()?;
        v
    } else {
        raw
    };
    let mut archive = tar::Archive::new(&bytes[..]);
    let mut c = None;
    for entry in archive.entries().ok()? {
        let mut entry = entry.ok()?;
        if entry.path().ok()?.file_name().is_some_and(|n| n == "lib0.c") {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut entry, &mut s).ok()?;
            c = Some(s);
        }
    }
    let c = c?;
    let tag = model.parent()?.file_name()?.to_string_lossy().into_owned();
    let with = object_bytes(&c, &format!("{tag}-with")).map_err(|e| eprintln!("{tag}: {e}")).ok()?;
    let without =
        object_bytes(&without_checks(&c), &format!("{tag}-without")).map_err(|e| eprintln!("{tag}: {e}")).ok()?;
    Some((with, with.saturating_sub(without)))
}

fn row(name: &str, kind: &str, model: &Path, dir: &Path) -> String {
    let (off, on) = match run(name, model, dir, false).and_then(|off| Ok((off, run(name, model, dir, true)?))) {
        Ok(r) => r,
        Err(e) => return format!("| {name} | {kind} | not built: {e} | | | | | | | |"),
    };
    let p = on.profile.unwrap_or_default();
    let calls = p["operators"].as_array().map_or(0, Vec::len) as u64;
    let sum = p["operators_instructions"].as_u64().unwrap_or(0);
    let inside = p["overhead"]["hook_inside_each_operator"].as_f64().unwrap_or(0.0);
    let kernels = (sum as f64 - inside * calls as f64).round() as u64;
    let beyond = off.instructions as i64 - kernels as i64;
    let per_call = if calls == 0 { 0.0 } else { beyond as f64 / calls as f64 };
    let (code, checks) = match checks(model) {
        Some((code, checks)) => {
            (code.to_string(), format!("{checks} ({:.1}% of flash)", checks as f64 * 100.0 / off.flash.max(1) as f64))
        }
        None => ("-".into(), "-".into()),
    };
    format!(
        "| {name} | {kind} | {calls} | {} | {kernels} | {beyond} | {per_call:.0} | {} | {code} | {checks} |",
        off.instructions, off.flash
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let needs = [
        device_tests::tools::Need::Target(THUMBV7EM),
        device_tests::tools::Need::QemuArm,
        device_tests::tools::Need::ArmGcc,
    ];
    if !device_tests::tools::require("relax_device bench", &needs) {
        return;
    }
    let only: Option<Vec<String>> =
        std::env::var("MLF_BENCH_ONLY").ok().map(|v| v.split(',').map(str::to_string).collect());
    let wanted = |n: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == n));
    let root = mlf_fixtures::workspace_root();
    let mut programs: Vec<(String, &str, PathBuf, PathBuf)> = Vec::new();
    let digits = root.join("examples/digits/model");
    programs.push(("digits (MLF graph)".into(), "graph", digits.join("digits.tar"), digits));
    let mut folders = vec![root.join("fixtures/relax")];
    if let Ok(extra) = std::env::var("MLF_RELAX_DIRS") {
        folders.extend(extra.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    for folder in folders {
        let Ok(rd) = std::fs::read_dir(&folder) else { continue };
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            // Exports for other machines (RV64, x86-64 and Cortex-M0+ objects) and those made to be refused
            // are left out.
            let other = name.contains("rv64") || name.contains("x86_64") || name.contains("thumbv6m");
            if !dir.join("model.tar").is_file() || name.starts_with("refuse-") || other {
                continue;
            }
            programs.push((name, "Relax", dir.join("model.tar"), dir));
        }
    }
    println!(
        "| program | executor | kernel calls | instructions per inference | kernels alone | beyond the kernels | per call | flash (program) | kernels' code + rodata | of which argument checks |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (name, kind, model, dir) in programs.iter().filter(|p| wanted(&p.0)) {
        println!("{}", row(name, kind, model, dir));
    }
}
