//! External parameters: program image size with embedded vs external parameters, the static RAM
//! parameters take resident vs streamed (staging = the largest operator's parameters; lazy
//! loading takes the resident figure), and time from start to the first result with embedded,
//! resident (from a split folder and from a packed archive), streamed and lazily loaded
//! parameters (whose start-up reads nothing: the first run reads each file before the first call
//! that uses it), against the time to parse and copy TVM's own `.params` file (what TVM's graph
//! executors do at start-up) measured in the same run. Every fixture kind is measured: `.params`
//! files, USMP constant pools, per-operator constant arrays, TVM 0.8 linked parameters, and
//! constants inside LLVM objects (archives derived with their kernels compiled into objects by
//! the host's `cc`) (`MLF_BENCH_ONLY=name,name` measures only those models).
//!
//! Every variant is built and run through `cargo mlf run --release`, exactly as a user would (and
//! optimised like this bench's own TVM peer); the program times itself from taking the model to
//! the first result (`MLF_RUN_TIMING`). Sizes are measured as `cargo mlf build` reports flash
//! (`mlf_build::__private::measure_library`: unwind tables left out). Run with
//! `cargo bench -p cargo-mlf --bench external`; figures go to stdout and
//! `target/bench-external.json`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mlf_fixtures::Manifest;

#[path = "../tests/common/mod.rs"]
mod common;

const RUNS: usize = 7;

fn work() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-bench")
}

/// What [`timed`] measured.
struct Timed {
    /// Median µs from taking the model to parameters ready.
    ready: f64,
    /// Median µs from taking the model to the first result.
    first: f64,
    /// The program `cargo mlf run` built.
    exe: PathBuf,
    /// The split folder or archive the parameters came from (external parameters).
    params: Option<PathBuf>,
}

/// Builds (release profile) and runs `model` with `extra` arguments `RUNS` times; returns the
/// medians of the times the program reports, and the paths `cargo mlf run` reported.
fn timed(model: &Path, dir: &Path, extra: &[&str]) -> Timed {
    let manifest = Manifest::read(dir).unwrap();
    let case = &manifest.cases[0];
    let mut times = Vec::new();
    let mut ready = Vec::new();
    let mut reported = (PathBuf::new(), None);
    for _ in 0..RUNS {
        let out = tempfile::tempdir().unwrap();
        let o = common::run_command(model, dir, case, out.path(), &work())
            .arg("--release")
            .args(extra)
            .env("MLF_RUN_TIMING", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{}: {err}", model.display());
        let ns = |key: &str| -> f64 {
            err.lines().find_map(|l| l.strip_prefix(key)).and_then(|l| l.trim_end_matches(" ns").parse().ok()).unwrap()
        };
        reported = (common::reported(&err, "running ").unwrap(), common::reported(&err, "parameters from "));
        times.push(ns("mlf-run: first result after ") / 1000.0);
        ready.push(ns("mlf-run: parameters ready after ") / 1000.0);
    }
    times.sort_by(f64::total_cmp);
    ready.sort_by(f64::total_cmp);
    Timed { ready: ready[RUNS / 2], first: times[RUNS / 2], exe: reported.0, params: reported.1 }
}

/// Code and data of a compiled library or program, as `cargo mlf build` reports flash: text,
/// read-only data and initialised data, unwind tables left out.
fn code_and_data(path: &Path) -> u64 {
    let s = mlf_build::__private::measure_library(path).unwrap();
    s.text + s.rodata + s.data
}

/// What a build with `params` gives: the model's own image (the report's flash: its compiled
/// library's code and data plus the parameter bytes embedded in the Rust module), the static RAM
/// for parameters, and the parameter bytes left in the C.
fn model_image(model: &Path, params: mlf_build::Placement) -> (u64, u64, u64) {
    let out = tempfile::tempdir().unwrap();
    let host = env!("MLF_HOST_TARGET");
    let built =
        mlf_build::Model::open(model).params(params).build_into(model, out.path(), "bench", host, host, false).unwrap();
    (
        code_and_data(built.library.as_ref().unwrap()) + built.embedded_param_bytes,
        built.param_ram_bytes,
        built.param_bytes_kept_in_code,
    )
}

/// TVM's start-up work on parameters: read the `.params` file, parse it and copy every tensor
/// into its own heap buffer. Median wall time (at least 11 runs, up to 0.2 s), µs.
fn tvm_params_us(model: &Path) -> Option<f64> {
    let desc = mlf_build::open(model).ok()?;
    let archive = mlf_build::__private::read::archive::Archive::open(model).ok()?;
    let name = format!("parameters/{}.params", desc.name);
    let file = archive.get(&name)?.to_vec();
    if file.len() <= 32 {
        return None;
    }
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), &file).unwrap();
    let t = mlf_fixtures::median_time(Duration::from_millis(200), || {
        let bytes = mlf_build::__private::bytes::Bytes::new(std::fs::read(tmp.path()).unwrap());
        let tensors = mlf_build::__private::read::params::parse_params(&bytes).unwrap();
        let copies: Vec<Vec<u8>> = tensors.iter().map(|p| p.data.to_vec()).collect();
        std::hint::black_box(copies);
    });
    Some(t.as_secs_f64() * 1e6)
}

/// The repository's digits archives (graph with linked constants; AOT, its C interface kept as
/// C) and, with the fixtures, the KWS AOT archive, with their kernels compiled into objects by
/// the host's `cc`, written under `dir`: (name, model, folder of the reference vectors).
fn objects(root: &Path, dir: &Path) -> Vec<(String, PathBuf, PathBuf)> {
    let digits = root.join("examples/digits/model");
    let mut out = vec![
        (
            "digits-graph-linked (objects)".to_string(),
            root.join("mlf-build/tests/models/digits-graph-linked.tar"),
            digits.clone(),
        ),
        ("digits-aot-c (objects)".to_string(), root.join("mlf-build/tests/models/digits-aot-c.tar"), digits),
    ];
    if let Some(fx) = mlf_fixtures::fixtures_dir() {
        let d = fx.join("mlf/kws-int8-aot-c");
        out.push(("kws-int8-aot-c (objects)".to_string(), d.join("model.tar"), d));
    }
    for (name, model, _) in &mut out {
        let members = mlf_fixtures::derived::with_c_as_objects(
            mlf_fixtures::tar_members(model),
            "cc",
            &["-O2", "-fPIC", "-ffp-contract=off"],
            |member| !member.ends_with("default_lib0.c") || name.contains("graph"),
        );
        *model = dir.join(name.replace([' ', '(', ')'], "_"));
        mlf_fixtures::write_members(model, &members);
    }
    out
}

fn main() {
    let root = mlf_fixtures::workspace_root();
    let mut models: Vec<(String, PathBuf, PathBuf)> = vec![(
        "digits (repository)".into(),
        root.join("examples/digits/model/digits.tar"),
        root.join("examples/digits/model"),
    )];
    if let Some(fx) = mlf_fixtures::fixtures_dir() {
        for n in [
            "digits-mlp-graph",
            "multi-io-graph",
            "kws-int8-graph",
            "resnet8-int8-graph",
            "guberti-tvm-graph-v2-cifar-lp0-syslib",
            "digits-mlp-graph-linked",
            "gvsoc-sine-graph-v7",
            "arduino-demos-kws-yesno-graph-v4",
            "digits-mlp-aot-usmp",
            "digits-mlp-aot-packed",
            "kws-int8-aot-usmp",
            "esp32-cifar-aot-v7-usmp",
            "digits-mlp-aot-c",
            "kws-int8-aot-c",
            "sine-aot-v5-c-iface",
        ] {
            let d = fx.join("mlf").join(n);
            let m = if d.join("model.tar").exists() { d.join("model.tar") } else { d.join("model") };
            models.push((n.into(), m, d));
        }
    } else {
        eprintln!("../shared/fixtures not found: only the repository's digits model is measured");
    }
    // Constants inside LLVM objects: archives whose kernels the host's cc compiled into objects
    // (no fixture carries objects).
    let derived = tempfile::tempdir().unwrap();
    models.extend(objects(&root, derived.path()));
    if let Ok(only) = std::env::var("MLF_BENCH_ONLY") {
        let only: Vec<&str> = only.split(',').collect();
        models.retain(|(n, ..)| only.iter().any(|o| n.starts_with(o)));
    }
    println!(
        "model image = the model's compiled code and data (+ embedded parameters), as `cargo mlf build` reports flash; program = code and data of the whole runner `cargo mlf run --release` builds (unwind tables left out in both)"
    );
    println!(
        "RAM res / RAM str = static RAM for parameters, resident (all of them) / streamed (staging: the largest operator's); kept = parameter bytes left in the C (constant arrays under 32 bytes)"
    );
    println!(
        "times: µs from taking the model to parameters ready / to the first result (median of {RUNS} runs; lazy: ready = the source opened, nothing read)\n"
    );
    println!(
        "{:<38} {:>9} {:>9} {:>6} {:>9} {:>9} {:>8} {:>8} {:>5} | {:>13} {:>13} {:>13} {:>13} {:>13} | {:>9}",
        "model",
        "model emb",
        "model ext",
        "ratio",
        "prog emb",
        "prog ext",
        "RAM res",
        "RAM str",
        "kept",
        "embedded",
        "resident dir",
        "resident tar",
        "streamed",
        "lazy",
        "TVM parse"
    );
    let mut json = Vec::new();
    for (name, model, dir) in &models {
        let emb = timed(model, dir, &[]);
        let res = timed(model, dir, &["--params", "resident"]);
        // A packed archive of the split the resident build wrote.
        let split = res.params.clone().expect("cargo mlf run names the split it read");
        let packed = work().join(format!("{}.params.tar", name.replace(' ', "_")));
        mlf_build::pack_folder(&split, &packed).unwrap();
        let tar = timed(model, dir, &["--params", "resident", "--from", packed.to_str().unwrap()]);
        let streamed = timed(model, dir, &["--params", "streamed", "--from", split.to_str().unwrap()]);
        let lazy = timed(model, dir, &["--params", "lazy", "--from", split.to_str().unwrap()]);
        let (r_emb, t_emb, r_res, t_res) = (emb.ready, emb.first, res.ready, res.first);
        let (r_tar, t_tar, r_str, t_str) = (tar.ready, tar.first, streamed.ready, streamed.first);
        let (r_lazy, t_lazy) = (lazy.ready, lazy.first);
        let (p_emb, p_ext) = (code_and_data(&emb.exe), code_and_data(&res.exe));
        let (m_emb, _, _) = model_image(model, mlf_build::Placement::Embedded);
        let (m_ext, ram_res, kept) = model_image(model, mlf_build::Placement::Resident);
        let (_, ram_str, _) = model_image(model, mlf_build::Placement::Streamed);
        let (_, ram_lazy, _) = model_image(model, mlf_build::Placement::Lazy);
        assert_eq!(ram_lazy, ram_res, "{name}: lazy loading fills the resident region");
        let tvm = tvm_params_us(model);
        println!(
            "{:<38} {:>9} {:>9} {:>6.3} {:>9} {:>9} {:>8} {:>8} {:>5} | {:>6.0} /{:>6.0} {:>6.0} /{:>6.0} {:>6.0} /{:>6.0} {:>6.0} /{:>6.0} {:>6.0} /{:>6.0} | {:>9}",
            name,
            m_emb,
            m_ext,
            m_ext as f64 / m_emb as f64,
            p_emb,
            p_ext,
            ram_res,
            ram_str,
            kept,
            r_emb,
            t_emb,
            r_res,
            t_res,
            r_tar,
            t_tar,
            r_str,
            t_str,
            r_lazy,
            t_lazy,
            tvm.map_or("n/a".to_string(), |t| format!("{t:.1}"))
        );
        json.push(format!(
            "{{\"model\":{name:?},\"model_image_embedded\":{m_emb},\"model_image_external\":{m_ext},\"program_embedded\":{p_emb},\"program_external\":{p_ext},\"param_ram_resident\":{ram_res},\"param_ram_streamed\":{ram_str},\"param_ram_lazy\":{ram_lazy},\"param_bytes_kept_in_code\":{kept},\"us_ready_embedded\":{r_emb:.1},\"us_first_embedded\":{t_emb:.1},\"us_ready_resident_folder\":{r_res:.1},\"us_first_resident_folder\":{t_res:.1},\"us_ready_resident_archive\":{r_tar:.1},\"us_first_resident_archive\":{t_tar:.1},\"us_ready_streamed\":{r_str:.1},\"us_first_streamed\":{t_str:.1},\"us_ready_lazy\":{r_lazy:.1},\"us_first_lazy\":{t_lazy:.1},\"us_tvm_params_parse_copy\":{}}}",
            tvm.map_or("null".into(), |t| format!("{t:.1}"))
        ));
    }
    let out = root.join("target/bench-external.json");
    std::fs::write(&out, format!("[{}]\n", json.join(",\n"))).unwrap();
    println!(
        "\n(TVM parse = read TVM's .params file, parse it and copy every tensor to the heap, what TVM's executors do at start-up, in this optimised bench; median wall time of at least 11 runs within 0.2 s, µs; n/a: no .params file)\nwritten to {}",
        out.display()
    );
}
