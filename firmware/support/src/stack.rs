//! Stack high-water by painting: the free stack below the current frame is filled with a
//! pattern, a call runs, and the deepest word no longer holding the pattern is how far the call
//! reached.

/// The pattern painted on free stack.
const PAINT: u32 = 0x5AC3_3CA5;
/// At most this many bytes below the current frame are painted (a call reaching the last
/// painted word is reported as overflowing the measurement).
pub const PAINT_BYTES: usize = 256 * 1024;

#[cfg(target_arch = "arm")]
unsafe extern "C" {
    /// cortex-m-rt: the lowest address the stack may grow to (end of `.bss`/`.uninit`).
    static _stack_end: u32;
}

/// The lowest address the stack may grow to.
#[cfg(target_arch = "arm")]
fn limit() -> usize {
    (&raw const _stack_end) as usize
}

#[cfg(target_arch = "riscv64")]
unsafe extern "C" {
    /// riscv-rt: the start of the stack region (its lowest address).
    static __estack: u32;
}

/// The lowest address the stack may grow to.
#[cfg(target_arch = "riscv64")]
fn limit() -> usize {
    (&raw const __estack) as usize
}

/// The stack pointer of the calling frame.
#[inline(always)]
pub fn current_sp() -> usize {
    let sp: usize;
    // SAFETY: reads the stack pointer register into a general register; no memory is touched.
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

/// Paints the free stack below `sp` (the caller's stack pointer, read in the same frame) and
/// returns the lowest painted address. Inlined, so it runs inside the caller's frame and never
/// writes under its own.
#[inline(always)]
pub fn paint_below(sp: usize) -> usize {
    let top = sp & !3;
    let bottom = top.saturating_sub(PAINT_BYTES).max((limit() + 3) & !3);
    let mut p = bottom;
    while p < top {
        // SAFETY: [bottom, top) lies between the linker's lowest stack address and the current
        // stack pointer: free stack that no live frame or static uses. Volatile, so the loop
        // is not turned into a call to `memset` (whose frame would be in the painted region).
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
    bottom
}

/// Bytes used below `sp` since [`paint_below`] painted down to `bottom`, and whether the use
/// reached `bottom` (then the figure is a lower bound). Inlined, like [`paint_below`].
#[inline(always)]
pub fn high_water(bottom: usize, sp: usize) -> (usize, bool) {
    let top = sp & !3;
    let mut p = bottom;
    // SAFETY: reads words of the region painted by `paint_below`, which is still stack memory
    // below the live frames (nothing is written).
    while p < top && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    (top - p, p == bottom && bottom < top)
}
