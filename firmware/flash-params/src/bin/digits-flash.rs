//! The digits model with its parameters outside the program: `Model::load` reads them once
//! through a `FlashArchive` over the parameter partition into the model's resident region,
//! then every reference case runs (outputs within the fixture's tolerance; the program uses
//! `compiler_builtins`' `expf`, see the `digits` program).
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::params::Counting;
use device_support::{Report, entry, measure, partition};
use mlf_runtime::params::FlashArchive;

include!(concat!(env!("OUT_DIR"), "/digits_flash.rs"));

#[entry]
fn main() -> ! {
    let mut report = Report::start("digits_flash");
    let Ok(mut source) = FlashArchive::open(partition::params(), &digits_flash::PACK) else {
        report.fail("partition-has-no-archive", None)
    };
    let Some(mut model) = digits_flash::Model::take() else { report.fail("take", None) };
    let mut counting = Counting { inner: &mut source, bytes: 0 };
    let (loaded, load) = measure(|| model.load(&mut counting));
    if let Err(e) = loaded {
        report.fail("load", Some(&e));
    }
    report.measured("load_instructions", load.instructions);
    report.measured("param_bytes_loaded", counting.bytes);
    for case in &CASES {
        let Some(pixels) = decode::<f32, 64>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = measure(|| model.run(&digits_flash::Inputs { pixels: &pixels }));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.output, case.outputs[0], TOLERANCE), false, &cost);
    }
    report.stated_stack(digits_flash::STACK_BYTES);
    report.finish()
}
