//! KWS int8 (graph) with its parameters streamed from the flash partition: every run reads
//! each operator's parameters through a `FlashArchive` (checked for size; the hash is checked
//! once, before the first run) into a staging buffer just before the operator. Every reference
//! case exact.
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::{Report, entry, measure, partition};
use mlf_runtime::params::FlashArchive;

include!(concat!(env!("OUT_DIR"), "/kws_flash.rs"));

#[entry]
fn main() -> ! {
    let mut report = Report::start("kws_flash");
    let Ok(mut source) = FlashArchive::open(partition::params(), &kws_flash::PACK) else { report.fail("partition-has-no-archive", None) };
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
    report.stated_stack(kws_flash::STACK_BYTES);
    report.finish()
}
