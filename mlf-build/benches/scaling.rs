//! How the build step scales with the model: reading and planning synthetic graph models of
//! 100 / 1,000 / 10,000 operators (`mlf_fixtures::synth::chain`), each timed as the median of
//! several runs. Run with `cargo bench -p mlf-build --bench scaling --profile dev` for the
//! figures a build script sees (Cargo builds build scripts and their dependencies without
//! optimisation), or without `--profile dev` for optimised code. The bench fails when a
//! 10,000-operator model takes 1 s or more to plan.

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
