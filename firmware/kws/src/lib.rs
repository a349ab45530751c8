//! The programs' common `main` (each program in `src/bin` includes its model's module).
#![no_std]

/// Defines the `main` of a program that runs the int8 KWS module `$m` (input `input_1`,
/// output `identity`) on every reference case and requires the outputs exactly; with `graph`
/// (a graph module), then measures what a run costs beyond the kernels
/// (`device_support::overhead::graph`); with `aot` (an AOT module with the C interface), what a
/// run costs beyond the entry point `tvmgen_default_run` called directly with its interface
/// structs built beforehand.
#[macro_export]
macro_rules! kws_program {
    ($m:ident) => {
        #[device_support::entry]
        fn main() -> ! {
            let (report, _model) = $crate::kws_cases!($m);
            report.finish()
        }
    };
    ($m:ident, aot) => {
        #[device_support::entry]
        fn main() -> ! {
            use core::ffi::c_void;
            use device_support::check::decode;
            use device_support::{measure, overhead};
            use mlf_runtime::StaticArena;
            /// Repetitions of each side: the counts are exact and the model is kernel-bound.
            const REPS: u64 = 4;
            static SCRATCH: StaticArena<{ $m::ARENA_BYTES }> = StaticArena::new();
            let (mut report, mut model) = $crate::kws_cases!($m);
            // `run()` and the entry point alone, on case 0; both outputs must agree.
            let Some(input) = decode::<i8, 490>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
            let inputs = $m::Inputs { input_1: &input };
            let (ok, runs) = measure(|| (0..REPS).all(|_| model.run(&inputs).is_ok()));
            let want = match model.run(&inputs) {
                Ok(out) if ok => *out.identity,
                Ok(_) => report.fail("run", None),
                Err(e) => report.fail("run", Some(&e)),
            };
            let mut got = want.map(|_| 0i8);
            let mut ins: [*mut c_void; 1] = [input.as_ptr().cast_mut().cast()];
            let mut outs: [*mut c_void; 1] = [got.as_mut_ptr().cast()];
            // SAFETY: SCRATCH serves nothing else and the model is not running; the entry point
            // reads the 490 input values and writes the outputs the structs point at, both
            // alive here.
            let measured = unsafe {
                overhead::with_model_workspace(&$m::entry::WORKSPACE, &SCRATCH, || {
                    measure(|| {
                        (0..REPS).all(|_| {
                            $m::entry::tvmgen_default_run(ins.as_mut_ptr().cast(), outs.as_mut_ptr().cast()) == 0
                        })
                    })
                })
            };
            let (true, kernels) = measured else { report.fail("kernels", None) };
            if got != want {
                report.fail("kernels-output", None);
            }
            report.overhead(runs.instructions / REPS, kernels.instructions / REPS, None);
            report.finish()
        }
    };
    ($m:ident, graph) => {
        #[device_support::entry]
        fn main() -> ! {
            use device_support::check::decode;
            use device_support::measure;
            use device_support::overhead::{self, GraphModel, GraphPeer};
            use mlf_runtime::{StaticArena, TakeOnce};
            static SCRATCH: StaticArena<{ $m::ARENA_BYTES }> = StaticArena::new();
            static PEER: TakeOnce<GraphPeer<128, 80>> = TakeOnce::new(GraphPeer::new());
            let (mut report, mut model) = $crate::kws_cases!($m);
            // What a run costs beyond the kernels (see `device_support::overhead`), on case 0.
            let Some(input) = decode::<i8, 490>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
            let (ok, runs) =
                measure(|| (0..overhead::REPS).all(|_| model.run(&$m::Inputs { input_1: &input }).is_ok()));
            let want = match model.run(&$m::Inputs { input_1: &input }) {
                Ok(out) if ok => *out.identity,
                Ok(_) => report.fail("run", None),
                Err(e) => report.fail("run", Some(&e)),
            };
            let want = want.map(|v| v as u8);
            let graph =
                GraphModel { calls: &$m::CALLS, kernels: &$m::KERNELS, nodes: GRAPH_NODES, names: &INPUT_NAMES };
            // SAFETY: the last run stored `input` (alive until the end of `main`); no model is
            // running; SCRATCH serves nothing else.
            unsafe { overhead::graph(&mut report, runs, &want, &graph, &[input.as_ptr().cast()], &SCRATCH, &PEER) };
            report.finish()
        }
    };
}

/// Takes the module `$m`, runs it on every reference case (outputs exact) and records its stated
/// stack: the part every program of [`kws_program!`] shares. Evaluates to the report and the
/// model.
#[doc(hidden)]
#[macro_export]
macro_rules! kws_cases {
    ($m:ident) => {{
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
        (report, model)
    }};
}
