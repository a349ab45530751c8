//! The digits MLP as a TVM AOT archive with the C interface (`digits-mlp-aot-c`, f32): every
//! reference case within the fixture's tolerance (`expf` from `compiler_builtins`, as the
//! `digits` program). Then what a run costs beyond the model's C, on case 0: `run()` against
//! the entry point `tvmgen_default_run` called directly with its interface structs built
//! beforehand (the workspace entered once, outside the measurement); both outputs must agree.
#![no_std]
#![no_main]

use core::ffi::c_void;

use device_support::check::{Match, compare, decode};
use device_support::{Report, entry, measure, overhead};
use mlf_runtime::StaticArena;
// The package's library carries the models' compiled C (the build script's static libraries):
// a program must use it to link them.
use kws as _;

include!(concat!(env!("OUT_DIR"), "/digits_aot.rs"));

#[entry]
fn main() -> ! {
    let mut report = Report::start("digits_aot");
    let Some(mut model) = digits_aot::Model::take() else { report.fail("take", None) };
    for case in &CASES {
        let Some(pixels) = decode::<f32, 64>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = measure(|| model.run(&digits_aot::Inputs { pixels: &pixels }));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.output, case.outputs[0], TOLERANCE), false, &cost);
    }
    report.stated_stack(digits_aot::STACK_BYTES);
    overhead(&mut report, &mut model);
    report.finish()
}

/// `run()` and the entry point alone, each [`overhead::REPS`] times on case 0.
fn overhead(report: &mut Report, model: &mut digits_aot::Model) {
    static SCRATCH: StaticArena<{ digits_aot::ARENA_BYTES }> = StaticArena::new();
    let Some(pixels) = decode::<f32, 64>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
    let inputs = digits_aot::Inputs { pixels: &pixels };
    let (ok, runs) = measure(|| (0..overhead::REPS).all(|_| model.run(&inputs).is_ok()));
    let want = match model.run(&inputs) {
        Ok(out) if ok => *out.output,
        Ok(_) => report.fail("run", None),
        Err(e) => report.fail("run", Some(&e)),
    };
    let mut got = [0u8; 40];
    let mut ins: [*mut c_void; 1] = [pixels.as_ptr().cast_mut().cast()];
    let mut outs: [*mut c_void; 1] = [got.as_mut_ptr().cast()];
    // SAFETY: SCRATCH serves nothing else and the model is not running; the entry point reads the
    // 64 input floats and writes the 10 output floats the structs point at, both alive here.
    let measured = unsafe {
        overhead::with_model_workspace(&digits_aot::entry::WORKSPACE, &SCRATCH, || {
            measure(|| {
                (0..overhead::REPS).all(|_| {
                    digits_aot::entry::tvmgen_default_run(ins.as_mut_ptr().cast(), outs.as_mut_ptr().cast()) == 0
                })
            })
        })
    };
    let (true, kernels) = measured else { report.fail("kernels", None) };
    if compare(&want, &got, TOLERANCE).result != Match::BitExact {
        report.fail("kernels-output", None);
    }
    let per = |c: device_support::Cost| c.instructions / overhead::REPS;
    report.overhead(per(runs), per(kernels), None);
}
