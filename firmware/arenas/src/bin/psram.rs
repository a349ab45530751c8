//! The program of `two-models` with the shared arena in the second RAM region (PSRAM, the link
//! section `.psram`): ResNet-8 (graph executor) and KWS (AOT) taking turns, every case exact.
#![no_std]
#![no_main]

// The package's library carries the models' compiled C: a program must use it to link them.
use arenas::{record_arena, run_cases};

include!(concat!(env!("OUT_DIR"), "/psram.rs"));

#[device_support::entry]
fn main() -> ! {
    let mut report = device_support::Report::start("arenas");
    let Some(mut arena) = arenas::arena!() else { report.fail("take-arena", None) };
    for _turn in 0..2 {
        run_cases!(report, arena, resnet, RESNET_CASES, RESNET_TOLERANCE, [i8; 3072], input_1_int8 -> identity_int8, exact = true);
        run_cases!(report, arena, kws, KWS_CASES, KWS_TOLERANCE, [i8; 490], input_1 -> identity, exact = true);
    }
    report.stated_stack(resnet::STACK_BYTES.max(kws::STACK_BYTES));
    record_arena(&mut report, ARENA_TOTAL, ARENA_PARTS);
    report.finish()
}
