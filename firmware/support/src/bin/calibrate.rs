//! Checks the instruction counter: a loop of exactly two instructions per iteration runs
//! 1,004,097 and 4,097 times; the difference of the two counts must be 2,000,000 instructions
//! (to one SysTick tick on Arm). Prints it as the `instructions` of a one-case report.
#![no_std]
#![no_main]

use device_support::check::{Comparison, Match};
use device_support::{Cost, Report, count, entry, measure};

/// Runs `n` (≥ 1) iterations of a two-instruction loop (decrement, branch if not zero).
#[inline(never)]
fn spin(n: u32) {
    // SAFETY: only the scratch register holding `n` is changed; no memory or stack is used.
    #[cfg(target_arch = "arm")]
    unsafe {
        core::arch::asm!("2:", "subs {0}, #1", "bne 2b", inout(reg) n => _, options(nomem, nostack))
    };
    // SAFETY: as above.
    #[cfg(target_arch = "riscv64")]
    unsafe {
        core::arch::asm!("2:", "addi {0}, {0}, -1", "bnez {0}, 2b", inout(reg) n as usize => _, options(nomem, nostack))
    };
}

const EXPECTED: u64 = 2_000_000;
/// Iterations of the two runs, loaded from memory so that both calls take the same
/// instructions to set up.
static ITERATIONS: [u32; 2] = [1_004_097, 4_097];

#[entry]
fn main() -> ! {
    let mut report = Report::start("calibrate");
    let (long, short) = (core::hint::black_box(&ITERATIONS)[0], core::hint::black_box(&ITERATIONS)[1]);
    // Both measurements start at the same phase of a counter tick (the micro:bit's tick is
    // 62.5 instructions, so otherwise the difference depends on where the program's earlier
    // code left the phase).
    count::align();
    let (_, long) = measure(|| spin(long));
    count::align();
    let (_, short) = measure(|| spin(short));
    let instructions = long.instructions - short.instructions;
    let exact = instructions == EXPECTED;
    let within_a_tick = instructions.abs_diff(EXPECTED) <= count::INSTRUCTIONS_PER_TICK;
    let result = if exact {
        Match::BitExact
    } else if within_a_tick {
        Match::Close
    } else {
        Match::Differs
    };
    let compared = Comparison { result, max_distance: instructions.abs_diff(EXPECTED) };
    report.case(compared, false, &Cost { instructions, ..long });
    report.finish()
}
