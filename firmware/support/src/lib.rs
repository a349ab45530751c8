//! `no_std` support for mlf's on-device test programs (Cortex-M under `qemu-system-arm`, RV64
//! under `qemu-system-riscv64 -machine virt`):
//!
//! - [`entry`]: the runtime crate's entry attribute (cortex-m-rt or riscv-rt);
//! - [`measure`]: runs a call with the stack below it painted and returns its exact instruction
//!   count (QEMU `-icount shift=0`: SysTick on Arm, `minstret` on RISC-V) and stack high-water;
//! - [`check`]: decodes reference vectors and compares outputs (integers exactly, floats bit by
//!   bit and within a tolerance);
//! - [`overhead`]: the kernels alone and a TVM-style executor over the same kernels;
//! - [`params`]: a parameter source counting the bytes read;
//! - [`Report`]: prints one `mlf-device …` line per case and a summary line through semihosting
//!   and ends QEMU with the status (0 when every case passed); the `device-tests` crate parses
//!   these lines.
//!
//! The programs print without `core::fmt` (see [`out::Line`]) to stay lean.
#![no_std]

pub mod check;
pub mod count;
pub mod math;
pub mod out;
pub mod overhead;
pub mod params;
#[cfg(machine = "mps2")]
pub mod partition;
mod report;
pub mod stack;

pub use report::Report;

#[cfg(target_arch = "arm")]
pub use cortex_m_rt::entry;
#[cfg(target_arch = "riscv64")]
pub use riscv_rt::entry;

/// What one measured call cost on the device.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cost {
    /// Instructions executed by the call (exact under `-icount shift=0`; on Arm to the SysTick
    /// resolution, [`count::INSTRUCTIONS_PER_TICK`]).
    pub instructions: u64,
    /// Bytes of stack the call used below its caller's frame (painted-stack high-water).
    pub stack: usize,
    /// The call used all of the painted region: `stack` is a lower bound.
    pub stack_overflowed: bool,
}

/// Runs `f` once, measuring it: the free stack below this frame is painted first (at most
/// [`stack::PAINT_BYTES`]), the instruction counter is read around the call, and the painted
/// region is scanned afterwards for the deepest word the call changed.
#[inline(never)]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Cost) {
    let sp = stack::current_sp();
    let painted = stack::paint_below(sp);
    let start = count::now();
    let result = call(f);
    let end = count::now();
    let (stack, stack_overflowed) = stack::high_water(painted, sp);
    (result, Cost { instructions: count::instructions(start, end), stack, stack_overflowed })
}

/// Calls `f` in a frame of its own, so everything `f` puts on the stack is below `measure`'s.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Prints where the program panicked and ends QEMU with status 101.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut line = out::Line::new();
    line.text("mlf-device panic");
    if let Some(loc) = info.location() {
        line.text(" at ").text(loc.file()).text(":").number(u64::from(loc.line()));
    }
    line.print();
    out::exit(101)
}
