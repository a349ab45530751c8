//! The digits model with its parameters outside the program: `Model::load` reads them once
//! through a `FlashArchive` over the parameter partition into the model's resident region,
//! then every reference case runs (outputs within the fixture's tolerance; the program uses
//! `compiler_builtins`' `expf`, see the `digits` program).
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::{Report, entry, measure, partition};
use mlf_runtime::params::FlashArchive;

include!(concat!(env!("OUT_DIR"), "/digits_flash.rs"));

#[entry]
fn main() -> ! {
    let mut report = Report::start("digits_flash");
    let Ok(mut source) = FlashArchive::new(partition::params()) else { report.fail("no archive in the partition") };
    let Some(mut model) = digits_flash::Model::take() else { report.fail("take") };
    if model.load(&mut source).is_err() {
        report.fail("load");
    }
    for case in &CASES {
        let Some(pixels) = decode::<f32, 64>(case.inputs[0]) else { report.fail("input size") };
        let (out, cost) = measure(|| model.run(&digits_flash::Inputs { pixels: &pixels }));
        let Ok(out) = out else { report.fail("run") };
        report.case(compare(out.output, case.outputs[0], TOLERANCE), false, &cost);
    }
    report.finish()
}
