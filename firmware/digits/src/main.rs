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
use device_support::{Report, entry, measure};

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
    report.finish()
}
