//! ResNet-8 (int8, graph executor) and KWS (int8, AOT with the C interface) on one shared arena
//! (with `apart`: each on its own), taking turns: ResNet-8, KWS, ResNet-8 again, every reference
//! case of each exact. The arena is the larger model's (ResNet-8's), not the sum.
#![no_std]
#![no_main]

// The package's library carries the models' compiled C: a program must use it to link them.
use arenas::{record_arena, run_cases};

include!(concat!(env!("OUT_DIR"), "/two.rs"));

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
