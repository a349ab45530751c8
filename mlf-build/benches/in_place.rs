//! In-place operators against the liveness bound at tensor granularity, for every fixture mlf
//! plans by liveness: the graph models of `../shared/fixtures/mlf` and the Relax exports of
//! `fixtures/relax`. For each: the bound (the most bytes of tensors and scratch live at one
//! step), the arena planned without in-place operators (`Model::in_place(false)`), the arena
//! planned with them (the default) and how many operators write over a dying input.
//! `cargo bench -p mlf-build --bench in_place`.

use std::path::Path;

use mlf_build::__private::plan::graph::plan;
use mlf_build::__private::plan::relax;
use mlf_build::Executor;

fn main() {
    println!(
        "| fixture | executor | tensor-level bound | arena, in place off | arena, in place on | change vs bound | in-place operators |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let shared = mlf_fixtures::fixtures_or_skip("the graph rows of bench in_place");
    let mut graphs = shared.map(|root| mlf_fixtures::mlf_fixtures(&root)).unwrap_or_default();
    graphs.sort_by(|a, b| a.name.cmp(&b.name));
    for fx in graphs {
        let desc = mlf_build::open(&fx.model).unwrap();
        let Executor::Graph(g) = &desc.executor else { continue };
        let on = plan(&desc, g, desc.plan_align()).unwrap();
        let mut without = desc.clone();
        without.without_in_place();
        let off = plan(&without, g, desc.plan_align()).unwrap();
        assert!(off.in_place.is_empty() && on.arena_bytes <= off.arena_bytes, "{}", fx.name);
        row(&fx.name, "graph", on.tensor_bound, off.arena_bytes, on.arena_bytes, on.in_place.len());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
    let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for d in dirs.iter().filter(|d| d.join("vectors").is_dir()) {
        let desc = mlf_build::open(d.join("model.tar")).unwrap();
        let Executor::Relax(r) = &desc.executor else { continue };
        let align = desc.plan_align();
        let scratch = relax::kernel_scratch(&r.program, desc.code.sources.first().map(|s| &s.scan), align).unwrap();
        let p = relax::plan(&r.program, align, &scratch);
        // Relax plans have no in-place operators yet: the arena is the same either way.
        row(&d.file_name().unwrap().to_string_lossy(), "relax", p.bound, p.arena, p.arena, 0);
    }
}

fn row(name: &str, executor: &str, bound: u64, off: u64, on: u64, ops: usize) {
    let change = if bound == 0 { 0.0 } else { (on as f64 - bound as f64) * 100.0 / bound as f64 };
    println!("| {name} | {executor} | {bound} | {off} | {on} | {change:+.1}% | {ops} |");
}
