//! For every Relax export of `fixtures/relax`: the arena mlf plans (kernel scratch included)
//! beside the sum of TVM's own `alloc_storage` sizes and the liveness bound, and the weights'
//! bytes. `cargo bench -p mlf-build --bench relax_memory`. (Instructions per inference and
//! flash on an emulated device: `cargo mlf run EXPORT --target thumbv7em-none-eabihf`.)

use std::path::Path;

use mlf_build::__private::plan::relax::{kernel_scratch, plan};
use mlf_build::Executor;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
    let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    println!("| export | calls | TVM's storage | liveness bound | arena | of which scratch | weights |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for d in dirs.iter().filter(|d| d.join("vectors").is_dir()) {
        let desc = mlf_build::open(d.join("model.tar")).unwrap();
        let Executor::Relax(r) = &desc.executor else { unreachable!("a Relax export") };
        let align = desc.plan_align();
        let scratch = kernel_scratch(&r.program, desc.code.sources.first().map(|s| &s.scan), align).unwrap();
        let p = plan(&r.program, align, &scratch);
        assert!(p.arena <= p.bound.max(p.tvm_storage), "{}", d.display());
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            d.file_name().unwrap().to_string_lossy(),
            r.program.calls.len(),
            p.tvm_storage,
            p.bound,
            p.arena,
            scratch.iter().max().copied().unwrap_or(0),
            desc.param_bytes()
        );
    }
}
