//! The KPU as the CPU drives it, at the level the hardware has: control registers (the layer
//! argument FIFO among them), the KPU RAM window, and where the KPU sees the model. The
//! functions below are the one driver both backends run: they program the KPU, push each
//! layer's 12 words, and wait for `calc_done`.
//!
//! The register sequence follows the Kendryte standalone SDK (`lib/drivers/kpu.c`: `kpu_init`,
//! `kpu_send_layer`, `kpu_conv`): clear all interrupts, FIFO thresholds full 10 / empty 1,
//! `eight_bit_mode` 1, then per layer: clear, mask, push the words. It differs in two ways,
//! both within what the SDK itself does on other paths: completion is polled from the raw
//! interrupt register (with every interrupt masked) instead of taken as an interrupt, and
//! results that main memory needs are copied from KPU RAM by the CPU (the layer's
//! `send_data_out` is cleared) instead of streamed out of the output FIFO by DMA.

use crate::error::KmodelError;

use super::regs::{ALL_INTERRUPTS, CALC_DONE, LayerWords, Reg};

/// A KPU that layers can be run on: its registers, its RAM as the CPU sees it, and the bus
/// address at which it reads a model's tables.
///
/// Two implementations: [`crate::kpu::DeviceModel`] (emulated, anywhere) and, with the `k210`
/// feature, `crate::kpu::k210::K210` (the chip's own KPU through memory-mapped I/O).
pub trait KpuBackend {
    /// Writes a register. Writing the 12th word of a layer into
    /// [`Reg::LayerArgumentFifo`] starts the layer; a device model computes it then, and may
    /// fail (a word it cannot execute). Hardware writes never fail.
    fn write(&mut self, reg: Reg, value: u64) -> Result<(), KmodelError>;

    /// Reads a register.
    fn read(&mut self, reg: Reg) -> u64;

    /// KPU RAM as the CPU reads and writes it (at least the part the model uses).
    fn ram(&mut self) -> &mut [u8];

    /// The bus address at which the KPU reads byte 0 of `model`, after making `model` visible
    /// to the KPU (on the chip: written through the uncached alias of SRAM). An error when the
    /// KPU cannot read it there.
    fn model_address(&mut self, model: &[u8]) -> Result<u32, KmodelError>;

    /// How many times [`wait_done`] polls the raw interrupt register before giving up.
    fn poll_limit(&self) -> u64 {
        1 << 32
    }
}

/// Programs the KPU for a run: all interrupts cleared and masked (completion is polled), FIFO
/// thresholds full 10 / empty 1, 8-bit weights.
pub fn init<B: KpuBackend + ?Sized>(kpu: &mut B) -> Result<(), KmodelError> {
    kpu.write(Reg::InterruptClear, ALL_INTERRUPTS)?;
    kpu.write(Reg::FifoThreshold, 10 | (1 << 4))?;
    kpu.write(Reg::EightBitMode, 1)?;
    kpu.write(Reg::InterruptMask, ALL_INTERRUPTS)
}

/// Runs one layer: clears and masks the interrupts, pushes its 12 words into the layer
/// argument FIFO, and waits until it is done (`index` names the layer in errors).
pub fn run_layer<B: KpuBackend + ?Sized>(kpu: &mut B, words: &LayerWords, index: u32) -> Result<(), KmodelError> {
    kpu.write(Reg::InterruptClear, ALL_INTERRUPTS)?;
    kpu.write(Reg::InterruptMask, ALL_INTERRUPTS)?;
    for &w in words {
        kpu.write(Reg::LayerArgumentFifo, w)?;
    }
    wait_done(kpu, index)
}

/// Polls the raw interrupt register until `calc_done` is set, then clears it; an error after
/// [`KpuBackend::poll_limit`] reads.
pub fn wait_done<B: KpuBackend + ?Sized>(kpu: &mut B, index: u32) -> Result<(), KmodelError> {
    let limit = kpu.poll_limit();
    let mut polls = 0u64;
    while kpu.read(Reg::InterruptRaw) & CALC_DONE == 0 {
        polls += 1;
        if polls >= limit {
            return Err(KmodelError::KpuTimeout { index });
        }
        core::hint::spin_loop();
    }
    kpu.write(Reg::InterruptClear, ALL_INTERRUPTS)
}
