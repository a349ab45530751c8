//! Exact instruction counts under QEMU's `-icount shift=0` (one instruction per nanosecond of
//! virtual time).
//!
//! - Arm: SysTick on the core clock. The MPS2 machines run it at 25 MHz, so one tick is 40
//!   instructions; the micro:bit at 16 MHz, 62.5 instructions. The counter is 24 bits and its
//!   wraps are counted in the SysTick exception.
//! - RISC-V: the `minstret` CSR, which QEMU derives from the instruction count.
//!
//! [`start`] must run once before [`now`] is used (the [`crate::Report`] does it).

/// Instructions per counter tick, as a fraction (numerator, denominator): SysTick at 25 MHz
/// (MPS2) under 1 GHz of virtual instructions.
#[cfg(machine = "mps2")]
const PER_TICK: (u64, u64) = (40, 1);
/// SysTick at 16 MHz (micro:bit): 62.5 instructions per tick.
#[cfg(machine = "microbit")]
const PER_TICK: (u64, u64) = (125, 2);
/// `minstret` counts instructions.
#[cfg(machine = "virt")]
const PER_TICK: (u64, u64) = (1, 1);

/// The resolution of [`instructions`] (rounded up).
pub const INSTRUCTIONS_PER_TICK: u64 = PER_TICK.0.div_ceil(PER_TICK.1);

#[cfg(target_arch = "arm")]
mod arch {
    use core::sync::atomic::{AtomicU32, Ordering};

    use cortex_m::peripheral::SYST;
    use cortex_m::peripheral::syst::SystClkSource;

    /// Full 24-bit periods of SysTick since [`start`].
    static WRAPS: AtomicU32 = AtomicU32::new(0);
    const RELOAD: u32 = 0x00FF_FFFF;

    #[cortex_m_rt::exception]
    fn SysTick() {
        // The only writer (thumbv6m has no atomic read-modify-write).
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
        // Clearing leaves 0 until the first tick reloads the counter: wait for that.
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
}

#[cfg(target_arch = "riscv64")]
mod arch {
    pub fn start() {}

    #[inline(always)]
    pub fn ticks() -> u64 {
        riscv::register::minstret::read() as u64
    }
}

/// Starts the counter (once; later calls do nothing).
pub fn start() {
    arch::start()
}

/// Counter ticks since an arbitrary origin (see [`instructions`]).
#[inline(always)]
pub fn now() -> u64 {
    arch::ticks()
}

/// The instructions executed between two readings of [`now`].
pub fn instructions(start: u64, end: u64) -> u64 {
    end.saturating_sub(start) * PER_TICK.0 / PER_TICK.1
}

/// Waits until the counter has just advanced, so that code run next starts at the same phase
/// of a tick (to within the few instructions of this loop): two measurements that each start
/// here differ by whole ticks only by what they ran.
#[inline(never)]
pub fn align() {
    let start = now();
    while now() == start {}
}
