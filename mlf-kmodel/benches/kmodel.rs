//! Time per inference and KPU multiply-accumulates per second of the device-model backend (the
//! KPU emulated at register level) on the YOLO and face kmodels of ../shared/fixtures (skipped
//! when absent), with peers measured in the same run: the V3 and V4 compiles of the same YOLO,
//! RFB-320 vs slim-320, and activation rounding variant B vs A.
//!
//! `cargo bench -p mlf-kmodel` (set `KMODEL_BENCH_RUNS` to change the 10 timed runs).

use std::time::{Duration, Instant};

use mlf_kmodel::{self as kmodel, ActivationRounding, Memory, Model, Options, Step};

struct Bench {
    name: String,
    macs: u64,
    per_run: Duration,
}

fn bench(name: &str, bytes: &[u8], input: &[u8], rounding: ActivationRounding, runs: u32) -> Bench {
    let m = Model::parse(bytes).expect("model parses");
    let req = m.requirements();
    let mut main = vec![0u64; (req.main as usize).div_ceil(8)];
    let mut kpu = vec![0u8; req.kpu as usize];
    let mut scratch = vec![0u8; req.scratch as usize];
    let mut steps = vec![Step::Empty; m.steps()];
    m.decode_into(&mut steps).unwrap();
    let opts = Options { rounding };
    let mut once = || {
        let main_b: &mut [u8] = bytemuck::cast_slice_mut(&mut main);
        kmodel::run(&m, &steps, Memory { main: main_b, kpu: &mut kpu, scratch: &mut scratch }, input, opts).unwrap();
    };
    once(); // warm-up
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    for _ in 0..runs {
        let t = Instant::now();
        once();
        let e = t.elapsed();
        best = best.min(e);
        total += e;
    }
    let per_run = total / runs;
    let b = Bench { name: name.into(), macs: req.macs, per_run };
    println!(
        "{:<34} {:>9.2} ms/inference (best {:>7.2})  {:>7.3} GMAC/s  ({} KPU MACs)",
        b.name,
        per_run.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3,
        b.macs as f64 / per_run.as_secs_f64() / 1e9,
        b.macs
    );
    b
}

fn main() {
    let Some(root) = mlf_fixtures::fixtures_dir() else {
        println!("SKIP kmodel bench: ../shared/fixtures is not present");
        return;
    };
    let runs: u32 = std::env::var("KMODEL_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let k = root.join("kmodel");
    let read = |p: &str| std::fs::read(k.join(p)).unwrap();
    let dog = read("v3-20classes-yolo/input_dog_320x240_rgb_chw_u8.bin");
    let face = read("v4-fast-facedetect/input_face_320x240_rgb_chw_u8.bin");
    println!("kmodel device-model backend, {runs} runs each after one warm-up (mean, best), on this host:");
    let b = ActivationRounding::NncaseV02;
    let v3 = bench("yolo V3 (nncase v0.1)", &read("v3-20classes-yolo/yolo.kmodel"), &dog, b, runs);
    let v4 = bench("yolo V4 (nncase v0.2)", &read("v4-20classes-yolo/yolo.kmodel"), &dog, b, runs);
    let v3a = bench(
        "yolo V3, rounding variant A",
        &read("v3-20classes-yolo/yolo.kmodel"),
        &dog,
        ActivationRounding::NncaseV01,
        runs,
    );
    let rfb = bench("RFB-320 face (V4)", &read("v4-fast-facedetect/RFB-320.kmodel"), &face, b, runs);
    let slim = bench("slim-320 face (V4)", &read("v4-fast-facedetect/slim-320.kmodel"), &face, b, runs);
    let ratio = |a: &Bench, b: &Bench| a.per_run.as_secs_f64() / b.per_run.as_secs_f64();
    println!("peers (time ratios in this run):");
    println!("  yolo V4 / V3                 {:.3}", ratio(&v4, &v3));
    println!("  yolo V3 variant A / B        {:.3}", ratio(&v3a, &v3));
    println!(
        "  RFB-320 / slim-320           {:.3} (MAC ratio {:.3})",
        ratio(&rfb, &slim),
        rfb.macs as f64 / slim.macs as f64
    );
}
