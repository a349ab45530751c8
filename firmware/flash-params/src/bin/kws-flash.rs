//! KWS int8 (graph) with its parameters streamed from the flash partition: the pack is opened
//! once with `FlashArchive::open` against the module's `PACK` (header, model digest, every file
//! indexed), then every run reads each operator's parameters through it (one index lookup, size
//! and xxh64 checked) into a staging buffer just before the operator. Every reference case
//! exact. Prints the bytes one run reads (`param_bytes_per_run`, counted in a run of its own).
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::params::Counting;
use device_support::{Report, entry, measure, partition};
use mlf_runtime::params::FlashArchive;

include!(concat!(env!("OUT_DIR"), "/kws_flash.rs"));

#[entry]
fn main() -> ! {
    let mut report = Report::start("kws_flash");
    let Ok(mut source) = FlashArchive::open(partition::params(), &kws_flash::PACK) else {
        report.fail("partition-has-no-archive", None)
    };
    let Some(mut model) = kws_flash::Model::take() else { report.fail("take", None) };
    for case in &CASES {
        let Some(input) = decode::<i8, 490>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = measure(|| model.run(&kws_flash::Inputs { input_1: &input }, &mut source));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.identity, case.outputs[0], TOLERANCE), true, &cost);
    }
    let mut counting = Counting { inner: source, bytes: 0 };
    let Some(input) = decode::<i8, 490>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
    if let Err(e) = model.run(&kws_flash::Inputs { input_1: &input }, &mut counting) {
        report.fail("run", Some(&e));
    }
    report.measured("param_bytes_per_run", counting.bytes);
    report.stated_stack(kws_flash::STACK_BYTES);
    report.finish()
}
