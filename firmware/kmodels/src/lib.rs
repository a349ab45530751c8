//! The programs' common `main` (each program in `src/bin` includes its model's module).
#![no_std]

/// Defines the `main` of a program that runs the kmodel module `$m` (input `input`, output
/// `output`, f32) on every reference case. `$input` turns the case's input bytes into what
/// `Inputs::input` borrows (`None` when the size is wrong); `$bit_exact` says whether outputs
/// must be bit-identical to the reference or within the fixture's tolerance. The first run
/// (which parses the model into its plan) is measured apart, on the first case.
#[macro_export]
macro_rules! kmodel_program {
    ($m:ident, $input:expr, bit_exact = $bit_exact:expr) => {
        #[device_support::entry]
        fn main() -> ! {
            use device_support::check::compare;
            let mut report = device_support::Report::start(stringify!($m));
            report.stated_stack($m::STACK_BYTES);
            let Some(mut model) = $m::Model::take() else { report.fail("take", None) };
            let Some(first) = $input(CASES[0].inputs[0]) else { report.fail("input-size", None) };
            let (out, cost) = device_support::measure(|| model.run(&$m::Inputs { input: &first }).map(|_| ()));
            if let Err(e) = out {
                report.fail("run", Some(&e));
            }
            report.first_run(&cost);
            for case in &CASES {
                let Some(input) = $input(case.inputs[0]) else { report.fail("input-size", None) };
                let (out, cost) = device_support::measure(|| model.run(&$m::Inputs { input: &input }));
                let out = match out {
                    Ok(out) => out,
                    Err(e) => report.fail("run", Some(&e)),
                };
                report.case(compare(out.output, case.outputs[0], TOLERANCE), $bit_exact, &cost);
            }
            report.finish()
        }
    };
}
