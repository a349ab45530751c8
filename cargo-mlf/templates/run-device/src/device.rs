//! What the device program of `cargo mlf run --target` needs besides the model (copied from
//! mlf's `templates/run-device`): the entry point, input and output files through semihosting,
//! exact instruction counts, stack painting, the parameter partition, the one line it reports,
//! and fault handlers that report instead of hanging.
//!
//! - **Files**: QEMU runs with `-semihosting-config enable=on,target=native` in the folder of
//!   one run, so `inputs/input<i>.bin` and `outputs/output<i>.bin` are files of that folder.
//! - **Instructions** (QEMU `-icount shift=0`: one instruction per nanosecond of virtual time):
//!   on Arm, SysTick on the core clock (25 MHz on the MPS2 boards: one tick per 40
//!   instructions; 16 MHz on the micro:bit: 62.5) with its 24-bit wraps counted in the SysTick
//!   exception; on RISC-V, `minstret`.
//! - **Stack**: the free stack below the measuring frame is painted before the call (at most
//!   [`PAINT_BYTES`]) and scanned after it for the deepest word written.
//!
//! - **Profile** (feature `profile`, `cargo mlf run --profile`): the runtime's hook reads the
//!   same counter before and after each operator; one `mlf-run op …` line per operator.
//!
//! `build.rs` writes the machine's facts into `OUT_DIR/machine.rs`.

use core::ffi::CStr;
use core::fmt::Display;

use semihosting::io::Read as _;

#[cfg(target_arch = "arm")]
pub use cortex_m_rt::entry;
#[cfg(target_arch = "riscv64")]
pub use riscv_rt::entry;

// The machine's facts, written by build.rs: `PER_TICK` (instructions per counter tick, as a
// fraction), `PARAMS_ADDRESS` and `PARAMS_BYTES` (the parameter partition; 0 bytes when the
// machine has none).
include!(concat!(env!("OUT_DIR"), "/machine.rs"));

#[cfg(target_arch = "arm")]
mod counter {
    use core::sync::atomic::{AtomicU32, Ordering};

    use cortex_m::peripheral::SYST;
    use cortex_m::peripheral::syst::SystClkSource;

    /// Full 24-bit periods of SysTick since [`start`].
    static WRAPS: AtomicU32 = AtomicU32::new(0);
    const RELOAD: u32 = 0x00FF_FFFF;

    #[cortex_m_rt::exception]
    fn SysTick() {
        // The only writer (ARMv6-M has no atomic read-modify-write).
        WRAPS.store(WRAPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    pub fn start() {
        let Some(p) = cortex_m::Peripherals::take() else { return };
        let mut syst = p.SYST;
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // Clearing leaves 0 until the first tick reloads the counter.
        while SYST::get_current() == 0 {}
    }

    #[inline(always)]
    pub fn ticks() -> u64 {
        loop {
            let before = WRAPS.load(Ordering::Relaxed);
            let current = SYST::get_current();
            if WRAPS.load(Ordering::Relaxed) == before {
                return u64::from(before) * (u64::from(RELOAD) + 1) + u64::from(RELOAD - current);
            }
        }
    }

    unsafe extern "C" {
        /// cortex-m-rt: the lowest address the stack may grow to (the end of `.bss`/`.uninit`).
        static _stack_end: u32;
    }

    pub fn stack_limit() -> usize {
        (&raw const _stack_end) as usize
    }

    #[cortex_m_rt::exception]
    unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
        super::fail_with(format_args!(
            "hard fault at pc {:#010x} (a stack overflow into static memory, or a bad memory access)",
            frame.pc()
        ))
    }
}

#[cfg(target_arch = "riscv64")]
mod counter {
    pub fn start() {}

    #[inline(always)]
    pub fn ticks() -> u64 {
        riscv::register::minstret::read() as u64
    }

    unsafe extern "C" {
        /// riscv-rt: the lowest address of the stack region.
        static __estack: u32;
    }

    pub fn stack_limit() -> usize {
        (&raw const __estack) as usize
    }

    #[unsafe(export_name = "ExceptionHandler")]
    fn trap(frame: &riscv_rt::TrapFrame) -> ! {
        let _ = frame;
        super::fail_with(format_args!(
            "trap: mcause {:#x} at mepc {:#x}, address {:#x} (a stack overflow or a bad memory access)",
            riscv::register::mcause::read().bits(),
            riscv::register::mepc::read(),
            riscv::register::mtval::read()
        ))
    }
}

/// Starts the instruction counter (once, before [`measure`]).
pub fn start() {
    counter::start()
}

/// What one measured call cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cost {
    /// Instructions, to [`RESOLUTION`].
    pub instructions: u64,
    /// Bytes of stack used below the measuring frame.
    pub stack: usize,
    /// The call reached the end of the painted region: `stack` is a lower bound.
    pub overflowed: bool,
}

/// Instructions per counter tick, rounded up: the resolution of [`Cost::instructions`].
pub const RESOLUTION: u64 = PER_TICK.0.div_ceil(PER_TICK.1);
/// At most this much free stack is painted.
pub const PAINT_BYTES: usize = 1 << 20;
const PAINT: u32 = 0x5AC3_3CA5;

/// The stack pointer of the calling frame.
#[inline(always)]
fn current_sp() -> usize {
    let sp: usize;
    // SAFETY: copies the stack pointer into a general register; no memory is touched.
    #[cfg(target_arch = "arm")]
    unsafe {
        core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
    };
    // SAFETY: as above.
    #[cfg(target_arch = "riscv64")]
    unsafe {
        core::arch::asm!("mv {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
    };
    sp
}

/// Runs `f` once: paints the free stack below this frame, reads the counter around the call,
/// and finds the deepest stack word the call changed.
#[inline(never)]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Cost) {
    let top = current_sp() & !3;
    let bottom = top.saturating_sub(PAINT_BYTES).max((counter::stack_limit() + 3) & !3);
    let mut p = bottom;
    while p < top {
        // SAFETY: [bottom, top) lies between the lowest address the linker leaves the stack and
        // this frame's stack pointer: free stack no live frame or static uses. Volatile, so the
        // loop does not become a call to `memset` (whose frame would be in the region).
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
    let start = counter::ticks();
    let result = call(f);
    let end = counter::ticks();
    let mut p = bottom;
    // SAFETY: reads words of the region painted above, still free stack below this frame.
    while p < top && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    let instructions = end.saturating_sub(start) * PER_TICK.0 / PER_TICK.1;
    (result, Cost { instructions, stack: top - p, overflowed: p == bottom && bottom < top })
}

/// Calls `f` in a frame of its own, below [`measure`]'s.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The parameter partition `cargo mlf run` writes the packed parameters into with QEMU's
/// loader (`-device loader,file=…,addr=…,force-raw=on`), kept out of the program by memory.x.
#[allow(dead_code)]
pub fn params() -> &'static [u8] {
    if PARAMS_BYTES == 0 {
        return &[];
    }
    let start = core::ptr::with_exposed_provenance::<u8>(PARAMS_ADDRESS);
    // SAFETY: memory.x reserves [PARAMS_ADDRESS, +PARAMS_BYTES) of the machine's memory for the
    // partition: no section or stack is placed there and nothing writes it while the program
    // runs, so it can be read as one immutable byte slice for the whole program (QEMU reads
    // bytes the loader did not write as zero).
    unsafe { core::slice::from_raw_parts(start, PARAMS_BYTES) }
}

/// A little-endian element of a tensor file.
pub trait Le: Copy {
    /// Bytes per element.
    const BYTES: usize;
    /// The element from its `BYTES` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const BYTES: usize = core::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::BYTES]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
le!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// `dir/<stem><index>.bin` as a C string in `buf`.
fn path<'b>(buf: &'b mut [u8; 48], dir: &str, stem: &str, index: usize) -> &'b CStr {
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        for &b in bytes {
            if len < buf.len() - 1 {
                buf[len] = b;
                len += 1;
            }
        }
    };
    push(dir.as_bytes());
    push(b"/");
    push(stem.as_bytes());
    let mut digits = [0u8; 20];
    let (mut n, mut i) = (index, digits.len());
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    push(&digits[i..]);
    push(b".bin");
    buf[len] = 0;
    CStr::from_bytes_until_nul(&buf[..=len]).unwrap_or(c"?")
}

/// Reads `inputs/input<index>.bin` (raw little-endian elements, exactly `out.len()` of them)
/// into `out`.
pub fn read_input<T: Le>(index: usize, out: &mut [T]) {
    let mut buf = [0u8; 48];
    let name = path(&mut buf, "inputs", "input", index);
    let mut file = semihosting::fs::File::open(name).unwrap_or_else(|e| fail(name_str(name), e));
    let want = out.len() * T::BYTES;
    let len = file.metadata().map(|m| m.len()).unwrap_or_else(|e| fail(name_str(name), e));
    if len != want as u64 {
        fail_with(format_args!("{}: {len} bytes, expected {want}", name_str(name)));
    }
    let mut chunk = [0u8; 256];
    let per = chunk.len() / T::BYTES;
    for part in out.chunks_mut(per) {
        let bytes = &mut chunk[..part.len() * T::BYTES];
        file.read_exact(bytes).unwrap_or_else(|e| fail(name_str(name), e));
        for (x, b) in part.iter_mut().zip(bytes.chunks_exact(T::BYTES)) {
            *x = T::from_le(b);
        }
    }
}

/// Writes `outputs/output<index>.bin` (the output's bytes: little-endian on every target here).
pub fn write_output(index: usize, bytes: &[u8]) {
    let mut buf = [0u8; 48];
    let name = path(&mut buf, "outputs", "output", index);
    semihosting::fs::write(name, bytes).unwrap_or_else(|e| fail(name_str(name), e));
}

fn name_str(name: &CStr) -> &str {
    name.to_str().unwrap_or("?")
}

/// Prints the line `cargo mlf run` reads: `mlf-run <what> instructions=… resolution=… stack=…`.
pub fn report(what: &str, cost: &Cost) {
    semihosting::println!(
        "mlf-run {what} instructions={} resolution={RESOLUTION} stack={} stack_painted={PAINT_BYTES}{}",
        cost.instructions,
        cost.stack,
        if cost.overflowed { " stack_overflowed=yes" } else { "" }
    );
}

/// Reports the stack the model's module states one run needs (its `STACK_BYTES`), which
/// `cargo mlf run` compares with the painted high-water.
pub fn stated_stack(bytes: usize) {
    semihosting::println!("mlf-run stated stack={bytes}");
}

/// Reports that `what` failed with `e` and ends the program with status 1.
pub fn fail(what: &str, e: impl Display) -> ! {
    fail_with(format_args!("{what}: {e}"))
}

/// Reports `message` as the program's error and ends it with status 1.
pub fn fail_with(message: core::fmt::Arguments<'_>) -> ! {
    semihosting::println!("mlf-run error: {message}");
    exit(1)
}

/// Ends the program: QEMU exits with `code`.
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

/// Per-operator instructions (feature `profile`): the runtime's hook reads the counter before
/// and after each operator of the measured run and adds the difference to the operator's row.
#[cfg(feature = "profile")]
pub mod profile {
    use core::cell::UnsafeCell;

    use mlf_runtime::profile::{Edge, Event, Unit, clear_hook, set_hook};

    /// Operators profiled (later ones are counted as missing).
    pub const MAX_OPS: usize = 256;

    #[derive(Clone, Copy)]
    struct Row {
        ticks: u64,
        name: &'static str,
        kpu: bool,
    }

    struct Table {
        start: u64,
        rows: [Row; MAX_OPS],
        count: usize,
        missing: usize,
        /// Ticks the calibration's empty operators read between their two edges.
        inside: u64,
    }

    /// The index of the calibration's empty operator (never a model's).
    const CALIBRATION: u32 = u32::MAX;
    /// Empty operators timed to state the hook's own cost.
    const CALIBRATION_PAIRS: u64 = 32;

    struct Shared(UnsafeCell<Table>);

    // SAFETY: the program has one thread; the table is used by the hook (inside the run, never
    // re-entered: an operator does not run a model) and by `start`/`report` outside the run.
    unsafe impl Sync for Shared {}

    const EMPTY: Row = Row { ticks: 0, name: "", kpu: false };
    const FRESH: Table = Table { start: 0, rows: [EMPTY; MAX_OPS], count: 0, missing: 0, inside: 0 };
    static TABLE: Shared = Shared(UnsafeCell::new(FRESH));
    /// The calibration's figures in instructions: all its pairs of hook calls, and what they
    /// read between their edges (what every operator's figure holds of the hook).
    static CALIBRATED: Shared2 = Shared2(UnsafeCell::new((0, 0)));

    struct Shared2(UnsafeCell<(u64, u64)>);

    // SAFETY: as `Shared`: written by `start`, read by `report`, both outside the run.
    unsafe impl Sync for Shared2 {}

    fn hook(e: &Event) {
        let now = super::counter::ticks();
        // SAFETY: see `Shared`: no other reference to the table is live while the hook runs.
        let t = unsafe { &mut *TABLE.0.get() };
        match e.edge {
            Edge::Before => t.start = now,
            Edge::After if e.index == CALIBRATION => t.inside += now.saturating_sub(t.start),
            Edge::After => match t.rows.get_mut(e.index as usize) {
                Some(row) => {
                    *row = Row { ticks: row.ticks + now.saturating_sub(t.start), name: e.name, kpu: e.unit == Unit::Kpu };
                    t.count = t.count.max(e.index as usize + 1);
                }
                None => t.missing += 1,
            },
        }
    }

    /// Installs the hook, states its own cost (empty operators timed through it), and clears
    /// the table (just before the measured run).
    pub fn start() {
        // SAFETY: see `Shared`: no run is in progress.
        unsafe { *TABLE.0.get() = FRESH };
        set_hook(hook);
        let begin = super::counter::ticks();
        for _ in 0..CALIBRATION_PAIRS {
            mlf_runtime::profile::before(CALIBRATION, "calibration", Unit::Cpu);
            mlf_runtime::profile::after(CALIBRATION, "calibration", Unit::Cpu);
        }
        let end = super::counter::ticks();
        let to_instructions = |ticks: u64| ticks * super::PER_TICK.0 / super::PER_TICK.1;
        // SAFETY: see `Shared`: no run is in progress.
        unsafe {
            let inside = (*TABLE.0.get()).inside;
            *CALIBRATED.0.get() = (to_instructions(end.saturating_sub(begin)), to_instructions(inside));
            *TABLE.0.get() = FRESH;
        }
    }

    /// Removes the hook and prints one `mlf-run op` line per operator.
    pub fn report() {
        clear_hook();
        // SAFETY: see `Shared`: the hook is removed, the run is over.
        let t = unsafe { &*TABLE.0.get() };
        for (i, r) in t.rows[..t.count].iter().enumerate() {
            semihosting::println!(
                "mlf-run op index={i} unit={} instructions={} name={}",
                if r.kpu { "kpu" } else { "cpu" },
                r.ticks * super::PER_TICK.0 / super::PER_TICK.1,
                r.name
            );
        }
        if t.missing > 0 {
            semihosting::println!("mlf-run op_missing count={}", t.missing);
        }
        // SAFETY: see `Shared2`: written by `start`, the run is over.
        let (all, inside) = unsafe { *CALIBRATED.0.get() };
        semihosting::println!("mlf-run op_overhead pairs={CALIBRATION_PAIRS} instructions={all} inside={inside}");
    }
}
