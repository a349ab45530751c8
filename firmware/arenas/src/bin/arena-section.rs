//! One model on an arena of its own, the arena placed in the second RAM region: KWS int8 (graph
//! executor) built with `.arena_section(".psram")` in build.rs and included with
//! `arena_section = ".psram"`; the device's `memory.x` puts `.psram` in the MPS2's PSRAM. Every
//! reference case exact.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/kws-psram.rs"));

#[device_support::entry]
fn main() -> ! {
    use device_support::check::{compare, decode};
    let mut report = device_support::Report::start("arenas");
    let Some(mut model) = kws_graph::Model::take() else { report.fail("take", None) };
    for case in &CASES {
        let Some(input) = decode::<i8, 490>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = device_support::measure(|| model.run(&kws_graph::Inputs { input_1: &input }));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.identity, case.outputs[0], TOLERANCE), true, &cost);
    }
    report.stated_stack(kws_graph::STACK_BYTES);
    // The package's library carries the models' compiled C: a program must use it to link them.
    arenas::record_arena(&mut report, kws_graph::ARENA_BYTES, &[("kws_graph", kws_graph::ARENA_BYTES)]);
    report.finish()
}
