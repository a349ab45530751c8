//! The KPU as a register-level device model: it takes the same register writes the chip
//! takes, and computes each layer from exactly its 12 argument words, the emulated KPU RAM and
//! the model bytes its address fields point to, with the arithmetic of [`super::arith`].

use crate::error::{KmodelError, Pool};

use super::arith::{self, ActivationRounding, Tables, check_act_shifts};
use super::backend::KpuBackend;
use super::regs::{CALC_DONE, KpuLayer, LayerWords, Reg};

/// The bus address at which the device model shows a model by default: the start of the
/// K210's uncached SRAM window (0x4000_0000), where the chip's KPU reads tables.
pub const DEFAULT_MODEL_ADDRESS: u32 = 0x4000_0000;

/// An emulated KPU: registers, a layer argument FIFO that runs a layer on its 12th word, its
/// RAM, and scratch for the arithmetic.
pub struct DeviceModel<'a, 'm> {
    model: &'a [u8],
    base: u32,
    ram: &'m mut [u8],
    scratch: &'m mut [u8],
    rounding: ActivationRounding,
    fifo: LayerWords,
    queued: usize,
    raw: u64,
    mask: u64,
    fifo_threshold: u64,
    eight_bit: bool,
    layers: u32,
    last: LayerWords,
}

impl<'a, 'm> DeviceModel<'a, 'm> {
    /// A device model whose KPU sees `model` at [`DEFAULT_MODEL_ADDRESS`], with `ram` as KPU
    /// RAM and `scratch` for the arithmetic (at least the largest layer's
    /// [`KpuLayer::scratch_bytes`]).
    pub fn new(model: &'a [u8], ram: &'m mut [u8], scratch: &'m mut [u8], rounding: ActivationRounding) -> Self {
        DeviceModel {
            model,
            base: DEFAULT_MODEL_ADDRESS,
            ram,
            scratch,
            rounding,
            fifo: [0; 12],
            queued: 0,
            raw: 0,
            mask: 0,
            fifo_threshold: 0,
            eight_bit: false,
            layers: 0,
            last: [0; 12],
        }
    }

    /// Shows the model at bus address `base` instead.
    pub fn with_model_address(mut self, base: u32) -> Self {
        self.base = base;
        self
    }

    /// Layers executed so far.
    pub fn layers_run(&self) -> u32 {
        self.layers
    }

    /// The 12 words of the last layer executed (as the device latched them).
    pub fn last_layer(&self) -> &LayerWords {
        &self.last
    }

    /// The FIFO thresholds last written (full:4@0, empty:4@4).
    pub fn fifo_threshold(&self) -> u64 {
        self.fifo_threshold
    }

    /// The model bytes at bus address `addr`, `len` long (`what` names the table in errors).
    fn table(&self, addr: u32, len: usize) -> Result<&'a [u8], KmodelError> {
        let start = (addr as u64).checked_sub(self.base as u64);
        let slice = start.and_then(|s| self.model.get(s as usize..(s as usize).checked_add(len)?));
        slice.ok_or(KmodelError::KpuBus { index: self.layers, address: addr })
    }

    /// Executes the layer whose 12 words are `w`.
    fn execute(&mut self, w: &LayerWords) -> Result<(), KmodelError> {
        let index = self.layers;
        let l = KpuLayer::from_words(w, index)?;
        let unsupported = |what| Err(KmodelError::Invalid { index, what });
        if l.send_data_out {
            return unsupported("the device model does not emulate the output FIFO (send_data_out)");
        }
        if !self.eight_bit {
            return unsupported("the device model runs 8-bit weights only (eight_bit_mode is 0)");
        }
        let t = Tables {
            bn: self.table(l.bwsx_base_addr, 8 * l.out_c as usize)?,
            act: self.table(l.active_addr, 144)?,
            weights: self.table(l.para_start_addr, l.weight_bytes())?,
        };
        check_act_shifts(index, t.act)?;
        let (src, dst) = (l.src_row as usize * 64, l.dst_row as usize * 64);
        for end in [src as u64 + l.in_map_bytes(), dst as u64 + l.out_map_bytes()] {
            if end > self.ram.len() as u64 {
                return Err(KmodelError::OutOfRange { index, pool: Pool::Kpu, end, limit: self.ram.len() as u64 });
            }
        }
        if l.scratch_bytes() > self.scratch.len() as u64 {
            let (needed, got) = (l.scratch_bytes(), self.scratch.len() as u64);
            return Err(KmodelError::MemoryTooSmall { pool: Pool::Scratch, needed, got });
        }
        arith::conv(&l, &t, self.ram, (src, dst), self.scratch, self.rounding)?;
        if l.int_en {
            self.raw |= CALC_DONE;
        }
        Ok(())
    }
}

impl KpuBackend for DeviceModel<'_, '_> {
    fn write(&mut self, reg: Reg, value: u64) -> Result<(), KmodelError> {
        match reg {
            Reg::LayerArgumentFifo => {
                self.fifo[self.queued] = value;
                self.queued += 1;
                if self.queued == 12 {
                    self.queued = 0;
                    let words = self.fifo;
                    self.execute(&words)?;
                    self.layers += 1;
                    self.last = words;
                }
            }
            Reg::InterruptClear => self.raw &= !value,
            Reg::InterruptMask => self.mask = value,
            Reg::FifoThreshold => self.fifo_threshold = value,
            Reg::EightBitMode => self.eight_bit = value & 1 != 0,
            Reg::FifoCtrl | Reg::InterruptStatus | Reg::InterruptRaw | Reg::FifoDataOut => {}
        }
        Ok(())
    }

    fn read(&mut self, reg: Reg) -> u64 {
        match reg {
            Reg::InterruptRaw => self.raw,
            Reg::InterruptStatus => self.raw & !self.mask,
            Reg::InterruptMask => self.mask,
            Reg::FifoThreshold => self.fifo_threshold,
            Reg::EightBitMode => self.eight_bit as u64,
            _ => 0,
        }
    }

    fn ram(&mut self) -> &mut [u8] {
        self.ram
    }

    fn model_address(&mut self, model: &[u8]) -> Result<u32, KmodelError> {
        let same = core::ptr::eq(model.as_ptr(), self.model.as_ptr()) && model.len() <= self.model.len();
        let fits = (self.base as u64).checked_add(self.model.len() as u64).is_some_and(|e| e <= 1 << 32);
        match same && fits {
            true => Ok(self.base),
            false => Err(KmodelError::ModelPlacement { address: model.as_ptr() as usize as u64 }),
        }
    }

    fn poll_limit(&self) -> u64 {
        1
    }
}
