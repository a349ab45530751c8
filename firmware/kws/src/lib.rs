//! The programs' common `main` (each program in `src/bin` includes its model's module).
#![no_std]

/// Defines the `main` of a program that runs the int8 KWS module `$m` (input `input_1`,
/// output `identity`) on every reference case and requires the outputs exactly.
#[macro_export]
macro_rules! kws_program {
    ($m:ident) => {
        #[device_support::entry]
        fn main() -> ! {
            use device_support::check::{compare, decode};
            let mut report = device_support::Report::start(stringify!($m));
            let Some(mut model) = $m::Model::take() else { report.fail("take", None) };
            for case in &CASES {
                let Some(input) = decode::<i8, 490>(case.inputs[0]) else { report.fail("input-size", None) };
                let (out, cost) = device_support::measure(|| model.run(&$m::Inputs { input_1: &input }));
                let out = match out {
                    Ok(out) => out,
                    Err(e) => report.fail("run", Some(&e)),
                };
                report.case(compare(out.identity, case.outputs[0], TOLERANCE), true, &cost);
            }
            report.stated_stack($m::STACK_BYTES);
            report.finish()
        }
    };
}
