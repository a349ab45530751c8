//! How the build step scales with the model (synthetic graph models, `mlf_fixtures::synth::chain`):
//!
//! - planning: reading and planning models of 100 / 1,000 / 10,000 operators, each timed as the
//!   median of several runs; the bench fails when 10,000 operators take 1 s or more to plan;
//! - weights: a crate (build.rs + `include_model!`) with 1 / 10 / 100 MiB of embedded weights,
//!   built with cargo: the build script's time, rustc's peak RSS and time for the crate
//!   (`/usr/bin/time` around rustc through `RUSTC_WRAPPER`; once with a linker that does
//!   nothing, so the figure is rustc's own, and once as built, the linker, a child of rustc,
//!   included), the program run once, and how often
//!   `cargo check` opens the model after an edit of `main.rs` (under `strace`, when installed).
//!   The bench fails when rustc's peak RSS with 100 MiB is over 1.2 × the one with 1 MiB.
//!
//! Run with `cargo bench -p mlf-build --bench scaling --profile dev` for the figures a build
//! script sees (Cargo builds build scripts and their dependencies without optimisation), or
//! without `--profile dev` for optimised planning. `MLF_SCALING_ONLY=plan` or `=weights` runs one
//! part; `MLF_SCALING_CRATES=DIR` builds the weight crates against the mlf crates of another
//! checkout `DIR` (to compare with an earlier version); crates are built in
//! `target/scaling-bench`.

use std::time::{Duration, Instant};

use mlf_build::__private::plan::graph::plan;
use mlf_build::Executor;

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let only = std::env::var("MLF_SCALING_ONLY").unwrap_or_default();
    if only != "weights" {
        planning();
    }
    if only != "plan" {
        weights();
    }
}

fn planning() {
    let dir = tempfile::tempdir().unwrap();
    println!("## Planning (graph executor: three layouts packed and verified)\n");
    println!("| operators | read (ms) | plan (ms) | arena (bytes) | layout |");
    println!("|---:|---:|---:|---:|---|");
    let mut plan_10k = Duration::ZERO;
    for ops in [100usize, 1_000, 10_000] {
        let path = dir.path().join(format!("chain-{ops}.tar"));
        mlf_fixtures::write_tar(&path, &mlf_fixtures::synth::chain(ops, 4096));
        let runs = if ops >= 10_000 { 3 } else { 7 };
        let read = median(runs, || drop(mlf_build::open(&path).unwrap()));
        let desc = mlf_build::open(&path).unwrap();
        let Executor::Graph(g) = &desc.executor else { panic!("a graph model") };
        let planned = median(runs, || drop(plan(&desc, g, 16).unwrap()));
        let p = plan(&desc, g, 16).unwrap();
        println!(
            "| {ops} | {:.1} | {:.1} | {} | {} |",
            read.as_secs_f64() * 1e3,
            planned.as_secs_f64() * 1e3,
            p.arena_bytes,
            p.layout
        );
        if ops == 10_000 {
            plan_10k = planned;
        }
    }
    println!();
    assert!(plan_10k < Duration::from_secs(1), "a 10,000-operator model took {plan_10k:?} to plan (limit 1 s)");
}

/// The build.rs of a weight crate: builds the model and records its own time.
const BUILD_RS: &str = r#"fn main() {
    let t = std::time::Instant::now();
    mlf_build::Model::open("model.tar").compile_or_exit();
    if let Ok(log) = std::env::var("MLF_SCALING_LOG") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();
        writeln!(f, "build-script {}", t.elapsed().as_secs_f64()).unwrap();
    }
    println!("cargo::rerun-if-env-changed=MLF_SCALING_LOG");
}
"#;

/// The main.rs of a weight crate: one run on a constant input, the outputs' sum printed.
const MAIN_RS: &str = r#"mlf_runtime::include_model!("model.tar", name = synth);

fn main() {
    let mut model = synth::Model::take().expect("taken once");
    let x = [0.5f32; 16];
    let out = model.run(&synth::Inputs { x: &x }).expect("a run");
    println!("sum {}", out.output.iter().sum::<f32>());
}
"#;

/// `RUSTC_WRAPPER`: rustc under `/usr/bin/time` for the crate measured, plain for the others.
const WRAPPER: &str = r#"#!/bin/sh
case " $* " in
  *" --crate-name weights_bench "*) exec /usr/bin/time -f "rustc %M %e" -a -o "$MLF_SCALING_LOG" "$@" ;;
esac
exec "$@"
"#;

/// What one weight crate's build measured.
struct Weights {
    build_script: f64,
    rustc_kb: u64,
    rustc_s: f64,
    linked_kb: u64,
    model_opens: Option<usize>,
    sum: String,
}

fn weights() {
    let root = mlf_fixtures::workspace_root();
    let crates = std::env::var("MLF_SCALING_CRATES").map(std::path::PathBuf::from).unwrap_or(root.clone());
    let work = root.join("target/scaling-bench");
    std::fs::create_dir_all(&work).unwrap();
    let wrapper = work.join("rustc-wrapper.sh");
    std::fs::write(&wrapper, WRAPPER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = work.join(if crates == root { "target".to_string() } else { format!("target-{}", fnv(&crates)) });
    println!("## Weights (a crate embedding them, mlf crates of {})\n", crates.display());
    println!(
        "| weights | build script (s) | rustc peak RSS (MB) | rustc time (s) | with linking: peak RSS (MB) | opens of the model by `cargo check` after an edit | output |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---|");
    let mut rss = Vec::new();
    for mib in [1u64, 10, 100] {
        let w = weight_crate(&work.join(format!("weights-{mib}mib")), &crates, &target, &wrapper, mib);
        let opens = w.model_opens.map_or("(no strace)".to_string(), |n| n.to_string());
        println!(
            "| {mib} MiB | {:.2} | {:.0} | {:.2} | {:.0} | {opens} | {} |",
            w.build_script,
            w.rustc_kb as f64 / 1024.0,
            w.rustc_s,
            w.linked_kb as f64 / 1024.0,
            w.sum
        );
        rss.push(w.rustc_kb);
    }
    println!();
    let ratio = rss[2] as f64 / rss[0] as f64;
    println!("rustc peak RSS, 100 MiB / 1 MiB: {ratio:.2} × (limit 1.2 ×)\n");
    assert!(ratio <= 1.2, "rustc's peak RSS with 100 MiB of weights is {ratio:.2} × the one with 1 MiB");
}

fn fnv(p: &std::path::Path) -> String {
    let h = p
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{h:016x}")
}

/// Writes and builds the crate embedding `mib` MiB of weights in `dir`, then runs it and checks
/// it with `cargo check` after an edit of `main.rs`.
fn weight_crate(
    dir: &std::path::Path,
    crates: &std::path::Path,
    target: &std::path::Path,
    wrapper: &std::path::Path,
    mib: u64,
) -> Weights {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"weights-bench\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nmlf-runtime = {{ path = {:?}, features = [\"macros\"] }}\n\n\
         [build-dependencies]\nmlf-build = {{ path = {:?} }}\n\n[workspace]\n",
        crates.join("mlf-runtime"),
        crates.join("mlf-build")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let _ = std::fs::copy(crates.join("Cargo.lock"), dir.join("Cargo.lock"));
    std::fs::write(dir.join("build.rs"), BUILD_RS).unwrap();
    std::fs::write(dir.join("src/main.rs"), MAIN_RS).unwrap();
    mlf_fixtures::write_tar(&dir.join("model.tar"), &mlf_fixtures::synth::chain(12, mib << 20));
    let log = dir.join("measured.log");
    let _ = std::fs::remove_file(&log);
    let cargo = |args: &[&str]| {
        let mut c = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()));
        c.args(args)
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target)
            .env("RUSTC_WRAPPER", wrapper)
            .env("MLF_SCALING_LOG", &log);
        c
    };
    let out = cargo(&["build", "--quiet"]).output().unwrap();
    assert!(out.status.success(), "{}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let last = |key: &str| text.lines().filter_map(|l| l.strip_prefix(key)).last().map(str::to_string);
    let build_script: f64 = last("build-script ").expect("the build script ran").parse().unwrap();
    let rustc = last("rustc ").expect("rustc ran for the crate");
    let linked: u64 = rustc.split_once(' ').unwrap().0.parse().unwrap();
    let run = cargo(&["run", "--quiet"]).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let sum = String::from_utf8_lossy(&run.stdout).trim().to_string();
    // rustc alone: the crate compiled again with a linker that does nothing (`true`), so the
    // figure is rustc's and not the linker's (a child of rustc, counted in its peak otherwise).
    let alone = cargo(&["rustc", "--quiet", "--bin", "weights-bench", "--", "-C", "linker=true"]).output().unwrap();
    assert!(alone.status.success(), "{}", String::from_utf8_lossy(&alone.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let rustc = text.lines().filter_map(|l| l.strip_prefix("rustc ")).last().unwrap().to_string();
    // `cargo check` once (its own build of the crate), then again after an edit of main.rs:
    // that second check expands include_model! again; count the opens of the model file.
    assert!(cargo(&["check", "--quiet"]).status().unwrap().success());
    std::fs::write(dir.join("src/main.rs"), format!("{MAIN_RS}// edited\n")).unwrap();
    let trace = dir.join("check.strace");
    let model_opens = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=open,openat", "-o"])
        .arg(&trace)
        .arg(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["check", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("MLF_SCALING_LOG", &log)
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| {
            let t = std::fs::read_to_string(&trace).unwrap_or_default();
            t.lines().filter(|l| l.contains("model.tar\"") && !l.contains("ENOENT")).count()
        });
    std::fs::write(dir.join("src/main.rs"), MAIN_RS).unwrap();
    let (kb, secs) = rustc.split_once(' ').unwrap();
    Weights {
        build_script,
        rustc_kb: kb.parse().unwrap(),
        rustc_s: secs.parse().unwrap(),
        linked_kb: linked,
        model_opens,
        sum,
    }
}
