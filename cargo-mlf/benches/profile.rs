//! Per-operator profiles of every on-device program: the digits example and every runnable MLF
//! fixture (with vectors, without EXPECT.json) on the Cortex-M4F, and every kmodel fixture with
//! vectors on RV64, each run once through `cargo mlf run --target … --profile --profile-json`,
//! exactly as a user would. Prints one row per program: operators, the dominant operator and its
//! share, the operators' sum against the whole run. `MLF_BENCH_ONLY=name,name` measures only
//! those programs. Run with `cargo bench -p cargo-mlf --bench profile` (a minute or so per
//! program for its first build); skips with one line without QEMU or the cross tools.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::Manifest;

const THUMBV7EM: &str = "thumbv7em-none-eabihf";
const RISCV64: &str = "riscv64gc-unknown-none-elf";

fn work() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-bench-profile")
}

/// Runs `model`'s first case on `target` with `--profile` and returns the profile's JSON.
fn profile(name: &str, model: &Path, dir: &Path, target: &str) -> Result<serde_json::Value, String> {
    let manifest = Manifest::read(dir).ok_or("no manifest")?;
    let case = manifest.cases.first().ok_or("no case")?;
    let json = work().join(format!("{name}-{target}.json"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
    cmd.args(["mlf", "run"]).arg(model).arg("--raw").arg("--output-dir").arg(work().join("out"));
    cmd.arg("--build-dir").arg(work()).args(["--target", target, "--profile", "--profile-json"]).arg(&json);
    for i in &case.inputs {
        let file = dir.join("vectors").join(i.file.as_ref().ok_or("an input without a file")?);
        match &i.name {
            Some(n) => cmd.arg("--input").arg(format!("{n}={}", file.display())),
            None => cmd.arg("--input").arg(&file),
        };
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed").to_string());
    }
    let text = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn row(name: &str, target: &str, p: &serde_json::Value) -> String {
    let ops = p["operators"].as_array().cloned().unwrap_or_default();
    let (sum, run) = (p["operators_instructions"].as_u64().unwrap_or(0), p["run_instructions"].as_u64().unwrap_or(0));
    let top = ops.iter().max_by_key(|o| o["instructions"].as_u64().unwrap_or(0));
    let dominant = top.map_or("-".to_string(), |o| {
        format!(
            "#{} {} ({:.1}%)",
            o["index"],
            o["name"].as_str().unwrap_or("?"),
            o["share"].as_f64().unwrap_or(0.0) * 100.0
        )
    });
    let share = if run == 0 { 0.0 } else { sum as f64 * 100.0 / run as f64 };
    // The overhead the program states: the hook per operator (timed on empty operators), and
    // the run's own work between operators.
    let o = &p["overhead"];
    let hook = o["hook_per_operator"].as_f64().map_or("-".into(), |h| format!("{h:.0}"));
    let between = o["between_operators"].as_u64().map_or("-".into(), |b| b.to_string());
    format!("| {name} | {target} | {} | {dominant} | {sum} | {run} | {share:.1}% | {hook} | {between} |", ops.len())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let only: Option<Vec<String>> =
        std::env::var("MLF_BENCH_ONLY").ok().map(|v| v.split(',').map(str::to_string).collect());
    let wanted = |n: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == n));
    let mut programs: Vec<(String, PathBuf, PathBuf, &str)> = Vec::new();
    let digits = mlf_fixtures::workspace_root().join("examples/digits/model");
    programs.push(("digits".into(), digits.join("digits.tar"), digits, THUMBV7EM));
    if let Some(root) = mlf_fixtures::fixtures_dir() {
        for fx in mlf_fixtures::mlf_fixtures(&root) {
            if Manifest::read(&fx.dir).is_some() && !fx.dir.join("EXPECT.json").exists() {
                programs.push((fx.name.clone(), fx.model.clone(), fx.dir.clone(), THUMBV7EM));
            }
        }
        if let Ok(rd) = std::fs::read_dir(root.join("kmodel")) {
            let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            dirs.sort();
            for dir in dirs {
                let Some(model) = std::fs::read_dir(&dir).ok().and_then(|rd| {
                    rd.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "kmodel"))
                }) else {
                    continue;
                };
                if Manifest::read(&dir).is_some() {
                    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                    programs.push((name, model, dir, RISCV64));
                }
            }
        }
    }
    println!(
        "| program | target | operators | dominant operator (share of the run) | operators' sum | whole run | sum / run | hook per operator | between operators |\n|---|---|---:|---|---:|---:|---:|---:|---:|"
    );
    for (name, model, dir, target) in programs.iter().filter(|p| wanted(&p.0)) {
        match profile(name, model, dir, target) {
            Ok(p) => println!("{}", row(name, target, &p)),
            Err(e) => println!("| {name} | {target} | not measured: {e} | | | | | | |"),
        }
    }
}
