//! The digits MLP (TVM graph executor, f32) on the device: runs the ten reference cases of
//! `examples/digits/model/vectors` and compares every output with the reference.
//!
//! One source, three programs (crates), which differ in how the floats are computed:
//!
//! | program | model's C | `expf` | required |
//! |---|---|---|---|
//! | `digits` | `-ffp-contract=off` (mlf's default) | `compiler_builtins` (within 1 ulp) | within the fixture's tolerance |
//! | `digits-exact` | `-ffp-contract=off` | correctly rounded, as the reference's glibc | bit-exact |
//! | `digits-fma` | `fp_contract = true` (gcc fuses `a*b+c` into `vfma.f32`) | correctly rounded | within the tolerance |
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::overhead::{self, GraphModel, GraphPeer};
use device_support::{Report, entry, measure};
use mlf_runtime::{StaticArena, TakeOnce};

include!(concat!(env!("OUT_DIR"), "/model.rs"));

/// Every output must be bit-identical to the reference: floats computed as the reference's
/// were (no fused multiply-adds, correctly rounded `expf`).
const BIT_EXACT: bool = cfg!(feature = "exact-expf") && !cfg!(fp_contract);

/// The model's C calls `expf`: this one rounds as glibc's does (see device_support::math).
#[cfg(feature = "exact-expf")]
#[unsafe(no_mangle)]
extern "C" fn expf(x: f32) -> f32 {
    device_support::math::expf_correctly_rounded(x)
}

#[entry]
fn main() -> ! {
    let mut report = Report::start(env!("CARGO_PKG_NAME"));
    let Some(mut model) = digits::Model::take() else { report.fail("take", None) };
    for case in &CASES {
        let Some(pixels) = decode::<f32, 64>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = measure(|| model.run(&digits::Inputs { pixels: &pixels }));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.output, case.outputs[0], TOLERANCE), BIT_EXACT, &cost);
    }
    report.stated_stack(digits::STACK_BYTES);
    overhead(&mut report, &mut model);
    report.finish()
}

/// Measures `run()` [`overhead::REPS`] times on case 0, then the model's kernels alone and a
/// TVM-style graph executor over the same kernels (see `device_support::overhead`).
fn overhead(report: &mut Report, model: &mut digits::Model) {
    static SCRATCH: StaticArena<{ digits::ARENA_BYTES }> = StaticArena::new();
    static PEER: TakeOnce<GraphPeer<16, 16>> = TakeOnce::new(GraphPeer::new());
    let Some(pixels) = decode::<f32, 64>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
    let (ok, runs) = measure(|| (0..overhead::REPS).all(|_| model.run(&digits::Inputs { pixels: &pixels }).is_ok()));
    let want = match model.run(&digits::Inputs { pixels: &pixels }) {
        Ok(out) if ok => out.output.map(f32::to_ne_bytes),
        Ok(_) => report.fail("run", None),
        Err(e) => report.fail("run", Some(&e)),
    };
    let graph =
        GraphModel { calls: &digits::CALLS, kernels: &digits::KERNELS, nodes: GRAPH_NODES, names: &INPUT_NAMES };
    // SAFETY: the last run stored `pixels` (alive until the end of this function); no model is
    // running; SCRATCH serves nothing else.
    unsafe { overhead::graph(report, runs, want.as_flattened(), &graph, &[pixels.as_ptr().cast()], &SCRATCH, &PEER) };
}
