//! AOT models: time per inference and static RAM.
//!
//! The C of an AOT model already holds the call sequence, so the executor adds nothing to the
//! time; what differs is memory. The peer figure is what TVM's standalone flow asks the
//! application to allocate statically: `TVMGEN_<M>_WORKSPACE_SIZE` plus
//! `TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES` (16) of slack for its stack allocator, the output buffers,
//! and the USMP pool the C defines itself (counted on both sides). Run with
//! `cargo bench -p model-tests --bench aot`; figures are printed and written to
//! `target/bench-aot.json`.

use std::path::PathBuf;
use std::time::Duration;

struct Row {
    name: &'static str,
    us: f64,
    arena: usize,
    usmp: u64,
    peer: u64,
    high_water: usize,
}

#[allow(unused_macros)]
macro_rules! bench {
    ($rows:ident, $name:expr, $m:path, [$($inp:ident),*]) => {{
        use $m as model;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/mlf").join($name);
        let path = if dir.join("model.tar").exists() { dir.join("model.tar") } else { dir.join("model") };
        let desc = mlf_build::open(&path).unwrap();
        let mlf_build::Executor::Aot(a) = &desc.executor else { unreachable!() };
        let usmp = a.usmp.as_ref().map_or(0, |u| u.workspace_bytes);
        let outputs: u64 = desc.outputs.iter().map(|t| t.bytes()).sum();
        let peer = if a.workspace_bytes > 0 { a.workspace_bytes + 16 } else { 0 } + outputs + usmp;
        let manifest = mlf_fixtures::Manifest::read(&dir).unwrap();
        let mut files = manifest.cases[0].inputs.iter().map(|i| dir.join("vectors").join(i.file.as_ref().unwrap()));
        $( let $inp = mlf_fixtures::load(&files.next().unwrap()); )*
        let mut net = model::Model::take().unwrap();
        let t = mlf_fixtures::median_time(Duration::from_millis(300), || {
            std::hint::black_box(net.run(&model::Inputs { $($inp: &$inp),* }).unwrap());
        });
        $rows.push(Row { name: $name, us: t.as_secs_f64() * 1e6, arena: model::ARENA_BYTES, usmp, peer, high_water: net.workspace_high_water() });
    }};
}

fn main() {
    #[allow(unused_mut)]
    let mut rows: Vec<Row> = Vec::new();
    #[cfg(mlf_shared)]
    {
        use model_tests::aot as m;
        bench!(rows, "digits-mlp-aot-c", m::digits_c, [pixels]);
        bench!(rows, "digits-mlp-aot-packed", m::digits_packed, [pixels]);
        bench!(rows, "digits-mlp-aot-usmp", m::digits_usmp, [pixels]);
        bench!(rows, "esp32-cifar-aot-v7-usmp", m::cifar_esp32_usmp, [input_1]);
        bench!(rows, "kws-int8-aot-c", m::kws_c, [input_1]);
        bench!(rows, "kws-int8-aot-usmp", m::kws_usmp, [input_1]);
        bench!(rows, "sine-aot-v5-c-iface", m::sine_v5, [dense_4_input]);
    }
    #[cfg(not(mlf_shared))]
    eprintln!("../shared/fixtures not found: no AOT model to measure");
    println!(
        "{:<28} {:>11} | {:>10} {:>10} {:>11} {:>12} {:>7} {:>12}",
        "model", "µs/inf", "mlf arena", "C's pool", "mlf total", "TVM standal.", "ratio", "ws high-water"
    );
    let mut json = Vec::new();
    for r in &rows {
        let total = r.arena as u64 + r.usmp;
        println!(
            "{:<28} {:>11.2} | {:>10} {:>10} {:>11} {:>12} {:>7.3} {:>12}",
            r.name,
            r.us,
            r.arena,
            r.usmp,
            total,
            r.peer,
            total as f64 / r.peer as f64,
            r.high_water
        );
        json.push(format!(
            "{{\"model\":{:?},\"us\":{:.3},\"arena\":{},\"usmp_pool\":{},\"tvm_standalone\":{},\"workspace_high_water\":{}}}",
            r.name, r.us, r.arena, r.usmp, r.peer, r.high_water
        ));
    }
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-aot.json");
    let _ = std::fs::write(&out, format!("[{}]\n", json.join(",\n")));
    println!(
        "\n(TVM standalone = TVMGEN_<M>_WORKSPACE_SIZE + 16 bytes of slack + outputs + the C's USMP pool)\nwritten to {}",
        out.display()
    );
}
