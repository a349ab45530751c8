//! Several different models on one shared arena on the device: each program takes its models in
//! turn on `models` (`mlf_runtime::shared_arena!`, declared by the build script beside them), runs
//! every reference case of each and compares the outputs. The `arenas-apart` package builds the
//! same programs with every model on an arena of its own (`apart`), the peer whose static RAM
//! the shared arena's is measured against.
#![no_std]

/// The shared arena's handle (`Some(())` when the models have arenas of their own).
#[cfg(not(feature = "apart"))]
#[macro_export]
macro_rules! arena {
    () => {
        models::Arena::take()
    };
}

/// The shared arena's handle (`Some(())` when the models have arenas of their own).
#[cfg(feature = "apart")]
#[macro_export]
macro_rules! arena {
    () => {
        Some(())
    };
}

/// Takes the model `$m` on the arena `$arena` (borrowing it for as long as the model lives).
#[cfg(not(feature = "apart"))]
#[macro_export]
macro_rules! take {
    ($m:ident, $arena:ident) => {
        $m::Model::take(&mut $arena)
    };
}

/// Takes the model `$m` (its arena its own; `$arena` is unused).
#[cfg(feature = "apart")]
#[macro_export]
macro_rules! take {
    ($m:ident, $arena:ident) => {{
        let _: &mut () = &mut $arena;
        $m::Model::take()
    }};
}

/// Takes `$m` on `$arena`, runs it on every case of `$cases` (input `$input`: `$n` values of
/// `$ty`; output `$output`) and records each in `$report` (bit-exact required when `$exact`);
/// the model is dropped at the end, handing the arena back.
#[macro_export]
macro_rules! run_cases {
    ($report:ident, $arena:ident, $m:ident, $cases:ident, $tol:ident, [$ty:ty; $n:literal], $input:ident -> $output:ident, exact = $exact:expr) => {{
        use device_support::check::{compare, decode};
        let Some(mut model) = $crate::take!($m, $arena) else { $report.fail("take", None) };
        for case in &$cases {
            let Some(input) = decode::<$ty, $n>(case.inputs[0]) else { $report.fail("input-size", None) };
            let (out, cost) = device_support::measure(|| model.run(&$m::Inputs { $input: &input }));
            let out = match out {
                Ok(out) => out,
                Err(e) => $report.fail("run", Some(&e)),
            };
            $report.case(compare(out.$output, case.outputs[0], $tol), $exact, &cost);
        }
    }};
}

/// Records the arena's figures in `report`: `arena_bytes` (the shared arena, or the sum of
/// the models' own) and each model's part.
pub fn record_arena(report: &mut device_support::Report, total: usize, parts: &'static [(&'static str, usize)]) {
    report.measured("arena_bytes", total as u64);
    for (name, bytes) in parts {
        report.measured(name, *bytes as u64);
    }
}

/// The program of `two-models` and `psram` (after the models' module file is included):
/// ResNet-8 (graph executor) and KWS (AOT) taking turns twice on the shared arena, every
/// reference case of each exact, then the stated stack and the arena's parts.
#[macro_export]
macro_rules! resnet_and_kws_program {
    () => {
        #[device_support::entry]
        fn main() -> ! {
            let mut report = device_support::Report::start("arenas");
            let Some(mut arena) = $crate::arena!() else { report.fail("take-arena", None) };
            for _turn in 0..2 {
                $crate::run_cases!(report, arena, resnet, RESNET_CASES, RESNET_TOLERANCE, [i8; 3072], input_1_int8 -> identity_int8, exact = true);
                $crate::run_cases!(report, arena, kws, KWS_CASES, KWS_TOLERANCE, [i8; 490], input_1 -> identity, exact = true);
            }
            report.stated_stack(resnet::STACK_BYTES.max(kws::STACK_BYTES));
            $crate::record_arena(&mut report, ARENA_TOTAL, ARENA_PARTS);
            report.finish()
        }
    };
}
