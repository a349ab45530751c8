//! The K210's own KPU (feature `k210`): a [`KpuBackend`] over memory-mapped I/O.
//!
//! Addresses (Kendryte standalone SDK, `lib/bsp/include/platform.h`): KPU registers at
//! `AI_BASE_ADDR` 0x4080_0000; KPU RAM, 2 MiB, at 0x8060_0000 through the cache and at
//! `AI_IO_BASE_ADDR` 0x4060_0000 uncached; SRAM, 6 MiB, at 0x8000_0000 cached and at
//! 0x4000_0000 uncached (`IOMEM`). The KPU reads a layer's tables at the uncached address of
//! the model (the SDK's `kpu_conv` computes `model + offset − IOMEM`), so the model must be
//! in SRAM, 256-byte aligned, and written through the uncached alias before the first run
//! (the SDK's loader copies it there; [`Mmio::make_visible`] does the same once).
//!
//! What this needs from the application: the KPU clock enabled (the SDK's
//! `sysctl_clock_enable(SYSCTL_CLOCK_AI)`), a memory layout that keeps its own data out of
//! 0x8060_0000..0x8080_0000 (KPU RAM), and the model embedded in SRAM (as a `static`; the
//! K210 boot ROM loads the whole image into SRAM).
//!
//! The register accesses go through [`Mmio`], so a test double can record them (and run a
//! [`crate::kpu::DeviceModel`] behind them); [`Hardware`] is the real one.

// The one module of the crate with `unsafe`: the hardware boundary (each block has its reason).
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::KmodelError;

use super::backend::KpuBackend;
use super::regs::{KPU_RAM_BYTES, Reg};

/// The KPU's register block (`AI_BASE_ADDR`).
pub const AI_BASE_ADDR: usize = 0x4080_0000;
/// KPU RAM, uncached (`AI_IO_BASE_ADDR`).
pub const AI_IO_BASE_ADDR: usize = 0x4060_0000;
/// SRAM through the cache.
pub const SRAM_BASE: usize = 0x8000_0000;
/// SRAM the CPU may use (6 MiB; the last 2 MiB of the 8 are KPU RAM).
pub const SRAM_BYTES: usize = 6 * 1024 * 1024;
/// Cached SRAM address − this = the uncached alias (`IOMEM`).
pub const IOMEM: usize = 0x4000_0000;

/// Memory-mapped access to the KPU: 64-bit registers at offsets from [`AI_BASE_ADDR`], the
/// KPU RAM window, and the model's placement.
pub trait Mmio {
    /// Writes the register at `offset`.
    fn write(&mut self, offset: usize, value: u64);
    /// Reads the register at `offset`.
    fn read(&mut self, offset: usize) -> u64;
    /// The 2 MiB of KPU RAM as the CPU sees them (uncached).
    fn ram(&mut self) -> &mut [u8];
    /// The CPU address of `p`.
    fn address_of(&self, p: *const u8) -> usize;
    /// Writes `bytes` (in SRAM) through the uncached alias, so that the KPU reads what the CPU
    /// sees; done once per model.
    fn make_visible(&mut self, bytes: &[u8]);
}

/// The K210's KPU as a [`KpuBackend`].
pub struct K210<M: Mmio> {
    mmio: M,
}

impl<M: Mmio> K210<M> {
    /// The KPU behind `mmio`.
    pub fn new(mmio: M) -> Self {
        K210 { mmio }
    }

    /// The memory-mapped access, back.
    pub fn into_inner(self) -> M {
        self.mmio
    }

    /// The memory-mapped access.
    pub fn mmio(&mut self) -> &mut M {
        &mut self.mmio
    }
}

fn reg_at(reg: Reg) -> usize {
    reg.offset()
}

impl<M: Mmio> KpuBackend for K210<M> {
    fn write(&mut self, reg: Reg, value: u64) -> Result<(), KmodelError> {
        self.mmio.write(reg_at(reg), value);
        Ok(())
    }

    fn read(&mut self, reg: Reg) -> u64 {
        self.mmio.read(reg_at(reg))
    }

    fn ram(&mut self) -> &mut [u8] {
        self.mmio.ram()
    }

    fn model_address(&mut self, model: &[u8]) -> Result<u32, KmodelError> {
        let at = self.mmio.address_of(model.as_ptr());
        let end = at.checked_add(model.len());
        let in_sram = at >= SRAM_BASE && end.is_some_and(|e| e <= SRAM_BASE + SRAM_BYTES);
        if !in_sram || at % 256 != 0 {
            return Err(KmodelError::ModelPlacement { address: at as u64 });
        }
        self.mmio.make_visible(model);
        Ok((at - IOMEM) as u32)
    }
}

/// Set while a [`Hardware`] exists.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// Start and length of the last model made visible (0, 0: none).
static VISIBLE: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));

/// The real registers and KPU RAM of the K210; one exists at a time.
pub struct Hardware {
    _private: (),
}

impl Hardware {
    /// The KPU, or `None` while another `Hardware` is alive.
    pub fn take() -> Option<Hardware> {
        match TAKEN.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Some(Hardware { _private: () }),
            Err(_) => None,
        }
    }
}

impl Drop for Hardware {
    fn drop(&mut self) {
        TAKEN.store(false, Ordering::Release);
    }
}

/// Orders memory and I/O accesses around a register access (the CPU's writes to KPU RAM
/// before a layer starts; its reads of the results after `calc_done`).
#[inline(always)]
fn io_fence() {
    #[cfg(target_arch = "riscv64")]
    // SAFETY: `fence iorw, iorw` only orders memory and I/O accesses; it touches no registers
    // or memory.
    unsafe {
        core::arch::asm!("fence iorw, iorw", options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "riscv64"))]
    core::sync::atomic::fence(Ordering::SeqCst);
}

impl Mmio for Hardware {
    fn write(&mut self, offset: usize, value: u64) {
        io_fence();
        let reg = (AI_BASE_ADDR + offset.min(Reg::EightBitMode.offset())) as *mut u64;
        // SAFETY: `reg` is one of the KPU's 64-bit registers (offsets 0x00..=0x40 from
        // AI_BASE_ADDR on the K210; larger offsets are clamped to the last), 8-byte aligned;
        // only one `Hardware` exists, so nothing else drives them concurrently.
        unsafe { reg.write_volatile(value) };
        io_fence();
    }

    fn read(&mut self, offset: usize) -> u64 {
        io_fence();
        let reg = (AI_BASE_ADDR + offset.min(Reg::EightBitMode.offset())) as *const u64;
        // SAFETY: as in `write`; reading a KPU register has no effect on Rust-visible memory.
        let v = unsafe { reg.read_volatile() };
        io_fence();
        v
    }

    fn ram(&mut self) -> &mut [u8] {
        // SAFETY: AI_IO_BASE_ADDR..+2 MiB is the K210's KPU RAM, uncached, not part of any Rust
        // allocation or static (the application's memory layout ends SRAM at 0x8060_0000). The
        // borrow of `self` (one `Hardware` exists) makes this the only reference; the KPU itself
        // writes it only while a layer runs, and the driver touches it only after the layer's
        // `calc_done` (with `io_fence` between).
        unsafe { core::slice::from_raw_parts_mut(AI_IO_BASE_ADDR as *mut u8, KPU_RAM_BYTES) }
    }

    fn address_of(&self, p: *const u8) -> usize {
        p as usize
    }

    fn make_visible(&mut self, bytes: &[u8]) {
        let (at, len) = (bytes.as_ptr() as usize, bytes.len());
        let in_sram = at >= SRAM_BASE && at.checked_add(len).is_some_and(|e| e <= SRAM_BASE + SRAM_BYTES);
        if !in_sram || (VISIBLE.0.load(Ordering::Relaxed), VISIBLE.1.load(Ordering::Relaxed)) == (at, len) {
            return;
        }
        let alias = (at - IOMEM) as *mut u8;
        for (i, &b) in bytes.iter().enumerate() {
            // SAFETY: `alias + i` is the uncached alias (SRAM address − 0x4000_0000) of
            // `bytes[i]`, inside SRAM (checked above); writing the byte it already holds changes
            // no value Rust can observe, and pushes it past the data cache to where the KPU reads.
            unsafe { alias.add(i).write_volatile(b) };
        }
        io_fence();
        VISIBLE.0.store(at, Ordering::Relaxed);
        VISIBLE.1.store(len, Ordering::Relaxed);
    }
}
