//! The KPU's registers: the 12 words of a layer argument (`kpu_layer_argument_t` in the
//! Kendryte standalone SDK, `lib/drivers/include/kpu.h`), decoded into the fields the
//! arithmetic needs, and encoded back with the addresses a run patches in.
//!
//! Word layout (bit positions LSB first; `name:width@bit`):
//!
//! | word | register | fields used here |
//! |---|---|---|
//! | 0 | interrupt_enabe | int_en:1@0, depth_wise_layer:1@3 |
//! | 1 | image_addr | image_src_addr:15@0, image_dst_addr:15@32 (64-byte KPU RAM rows) |
//! | 2 | image_channel_num | i_ch_num:10@0, o_ch_num:10@32 (channels − 1) |
//! | 3 | image_size | i_row_wid:10@0, i_col_high:9@10, o_row_wid:10@32, o_col_high:9@42 (sizes − 1) |
//! | 4 | kernel_pool_type_cfg | kernel_type:3@0 (0 = 1×1, 1 = 3×3), pool_type:4@4, pad_value:8@24, bwsx_base_addr:32@32 |
//! | 5 | kernel_load_cfg | load_time:6@1, para_size:17@15, para_start_addr:32@32 |
//! | 7 | kernel_calc_type_cfg | active_addr:32@32 |
//! | 9 | conv_value | shr_w:4@0, shr_x:4@4, arg_w:24@8 (signed), arg_x:24@32 (signed) |
//! | 10 | conv_value2 | arg_add:40@0 (signed) |
//! | 11 | dma_parameter | send_data_out:1@0, dma_total_byte:32@32 |
//!
//! Words 6 and 8 (kernel offsets, write-back configuration) are passed through unchanged. The
//! three address fields hold file offsets or 0 in a kmodel; a run replaces them with the bus
//! addresses of the batch-norm table, the weights and the activation table.

use crate::error::KmodelError;
use crate::reader::u64_at;

use super::layout::map_bytes;

/// KPU RAM size: 2 MiB, addressed in 64-byte rows (15-bit row numbers).
pub const KPU_RAM_BYTES: usize = 2 * 1024 * 1024;

/// The 12 argument words of one KPU layer, in the order they are pushed into the layer
/// argument FIFO.
pub type LayerWords = [u64; 12];

/// The KPU's control registers (`kpu_config_t` in the SDK's `kpu.h`), 64 bits each, at
/// `AI_BASE_ADDR` (0x4080_0000) + the offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// 0x00: the layer argument FIFO (write 12 words per layer).
    LayerArgumentFifo,
    /// 0x08: interrupt status (raw, masked).
    InterruptStatus,
    /// 0x10: raw interrupt bits: calc_done 0, layer_cfg_almost_empty 1, layer_cfg_almost_full 2.
    InterruptRaw,
    /// 0x18: interrupt mask (a set bit masks the interrupt).
    InterruptMask,
    /// 0x20: interrupt clear (write the bits to clear).
    InterruptClear,
    /// 0x28: FIFO thresholds: full:4@0, empty:4@4.
    FifoThreshold,
    /// 0x30: the output FIFO (results streamed when `send_data_out` is set).
    FifoDataOut,
    /// 0x38: FIFO flush control.
    FifoCtrl,
    /// 0x40: 1 = 8-bit weights.
    EightBitMode,
}

impl Reg {
    /// Byte offset from the KPU's register base.
    pub const fn offset(self) -> usize {
        match self {
            Reg::LayerArgumentFifo => 0x00,
            Reg::InterruptStatus => 0x08,
            Reg::InterruptRaw => 0x10,
            Reg::InterruptMask => 0x18,
            Reg::InterruptClear => 0x20,
            Reg::FifoThreshold => 0x28,
            Reg::FifoDataOut => 0x30,
            Reg::FifoCtrl => 0x38,
            Reg::EightBitMode => 0x40,
        }
    }
}

/// `calc_done` in the interrupt registers.
pub const CALC_DONE: u64 = 1;
/// All three interrupt bits.
pub const ALL_INTERRUPTS: u64 = 0b111;

/// The fields of a layer's 12 words an emulator needs, decoded and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KpuLayer {
    /// Depthwise convolution (output channel `c` reads input channel `c`).
    pub depthwise: bool,
    /// Input map row in KPU RAM.
    pub src_row: u32,
    /// Output map row in KPU RAM.
    pub dst_row: u32,
    /// Input channels.
    pub in_c: u32,
    /// Output channels.
    pub out_c: u32,
    /// Input width.
    pub in_w: u32,
    /// Input height.
    pub in_h: u32,
    /// Output width (after pooling).
    pub out_w: u32,
    /// Output height (after pooling).
    pub out_h: u32,
    /// Kernel size: 1 or 3.
    pub kernel: u32,
    /// Pooling.
    pub pool: PoolType,
    /// Value of padded taps.
    pub pad_value: u8,
    /// Shift of the `arg_x · Σx` term.
    pub shr_x: u32,
    /// Shift of the `arg_w · Σw` term.
    pub shr_w: u32,
    /// Input-sum coefficient (24-bit signed).
    pub arg_x: i64,
    /// Weight-sum coefficient (24-bit signed).
    pub arg_w: i64,
    /// Constant term per input channel (40-bit signed).
    pub arg_add: i64,
    /// `bwsx_base_addr` as stored (0 in V3 files; a skip count in V4 files; a bus address in
    /// the words a run pushes).
    pub bwsx_base_addr: u32,
    /// `para_start_addr` as stored.
    pub para_start_addr: u32,
    /// `active_addr` as stored.
    pub active_addr: u32,
    /// `load_time + 1`: weight loads.
    pub loads: u32,
    /// Bytes per weight load.
    pub para_size: u32,
    /// `dma_total_byte + 1`: bytes sent to main memory when the output is streamed out.
    pub dma_bytes: u32,
    /// `int_en`: the layer raises `calc_done` when it finishes.
    pub int_en: bool,
    /// `send_data_out`: the result is also streamed into the output FIFO.
    pub send_data_out: bool,
}

/// Sign-extends the low `bits` bits of `v` (`bits` is taken as 1 to 64).
pub fn sext(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits.clamp(1, 64);
    ((v << shift) as i64) >> shift
}

/// The `n`-bit field at bit `at` of `v`.
const fn bits(v: u64, at: u32, n: u32) -> u32 {
    ((v >> at) & ((1u64 << n) - 1)) as u32
}

/// The 12 words stored in 96 register bytes of a model (zero past the end of `regs`).
pub fn words_of(regs: &[u8]) -> LayerWords {
    core::array::from_fn(|i| u64_at(regs, i * 8))
}

impl KpuLayer {
    /// Decodes and checks the 96 register bytes of a model. Errors name the offending field.
    pub fn decode(regs: &[u8], index: u32) -> Result<KpuLayer, KmodelError> {
        if regs.len() < 96 {
            return Err(KmodelError::Invalid { index, what: "layer registers are shorter than 96 bytes" });
        }
        Self::from_words(&words_of(regs), index)
    }

    /// Decodes and checks 12 layer words (`index` names the layer in errors).
    pub fn from_words(w: &LayerWords, index: u32) -> Result<KpuLayer, KmodelError> {
        let bad = |what| KmodelError::Invalid { index, what };
        let kernel = match bits(w[4], 0, 3) {
            0 => 1,
            1 => 3,
            _ => return Err(bad("kernel_type must be 0 (1x1) or 1 (3x3)")),
        };
        let pool = PoolType::from_u8(bits(w[4], 4, 4) as u8).ok_or(bad("pool_type must be 0..=9"))?;
        let l = KpuLayer {
            depthwise: bits(w[0], 3, 1) != 0,
            src_row: bits(w[1], 0, 15),
            dst_row: bits(w[1], 32, 15),
            in_c: bits(w[2], 0, 10) + 1,
            out_c: bits(w[2], 32, 10) + 1,
            in_w: bits(w[3], 0, 10) + 1,
            in_h: bits(w[3], 10, 9) + 1,
            out_w: bits(w[3], 32, 10) + 1,
            out_h: bits(w[3], 42, 9) + 1,
            kernel,
            pool,
            pad_value: bits(w[4], 24, 8) as u8,
            shr_w: bits(w[9], 0, 4),
            shr_x: bits(w[9], 4, 4),
            arg_w: sext(bits(w[9], 8, 24) as u64, 24),
            arg_x: sext(bits(w[9], 32, 24) as u64, 24),
            arg_add: sext(w[10] & ((1 << 40) - 1), 40),
            bwsx_base_addr: bits(w[4], 32, 32),
            para_start_addr: bits(w[5], 32, 32),
            active_addr: bits(w[7], 32, 32),
            loads: bits(w[5], 1, 6) + 1,
            para_size: bits(w[5], 15, 17),
            dma_bytes: bits(w[11], 32, 32).wrapping_add(1),
            int_en: w[0] & 1 != 0,
            send_data_out: w[11] & 1 != 0,
        };
        if l.depthwise && l.in_c != l.out_c {
            return Err(bad("depthwise layer with different input and output channel counts"));
        }
        if pool.out_size(l.in_w) != l.out_w || pool.out_size(l.in_h) != l.out_h {
            return Err(bad("pooled input size does not equal the output size registers"));
        }
        if (l.loads as u64) * (l.para_size as u64) < l.weight_bytes() as u64 {
            return Err(bad("load_time x para_size is smaller than the weight count"));
        }
        Ok(l)
    }

    /// Weight bytes (8-bit weights).
    pub fn weight_bytes(&self) -> usize {
        let k2 = (self.kernel * self.kernel) as usize;
        if self.depthwise { self.out_c as usize * k2 } else { self.out_c as usize * self.in_c as usize * k2 }
    }

    /// Bytes of one input map in KPU RAM.
    pub fn in_map_bytes(&self) -> u64 {
        map_bytes(self.in_w, self.in_h, self.in_c)
    }

    /// Bytes of one output map in KPU RAM.
    pub fn out_map_bytes(&self) -> u64 {
        map_bytes(self.out_w, self.out_h, self.out_c)
    }

    /// Compact output bytes (one batch): `oc · oh · ow`.
    pub fn out_compact_bytes(&self) -> u64 {
        self.out_c as u64 * self.out_h as u64 * self.out_w as u64
    }

    /// Compact input bytes (one batch).
    pub fn in_compact_bytes(&self) -> u64 {
        self.in_c as u64 * self.in_h as u64 * self.in_w as u64
    }

    /// Multiply-accumulates of one batch.
    pub fn macs(&self) -> u64 {
        let per_pixel = if self.depthwise { 1 } else { self.in_c as u64 } * (self.kernel * self.kernel) as u64;
        per_pixel * self.out_c as u64 * self.in_h as u64 * self.in_w as u64
    }

    /// Scratch bytes the convolution emulation needs (with alignment slack).
    pub fn scratch_bytes(&self) -> u64 {
        let p = self.kernel as u64 - 1;
        let (pw, ph) = (self.in_w as u64 + p, self.in_h as u64 + p);
        let padded = self.in_c as u64 * pw * ph;
        let plane = self.in_w as u64 * self.in_h as u64;
        // padded input (u8), then i32 planes: channel sums (padded size), Σx, accumulator; then
        // the u8 activation plane; 8 bytes to align the start, 16 of slack.
        align4(padded) + 4 * (pw * ph) + 4 * plane * 2 + plane + 8 + 16
    }
}

/// `v` rounded up to a multiple of 4.
pub(crate) const fn align4(v: u64) -> u64 {
    (v + 3) & !3
}

/// A KPU layer as a model stores it: its 96 register bytes, the decoded fields, and the three
/// tables with their offsets in the model (what a run turns into bus addresses).
#[derive(Clone, Copy, Debug)]
pub struct KpuConv<'a> {
    /// The decoded registers.
    pub layer: KpuLayer,
    /// The 96 register bytes as stored.
    pub regs: &'a [u8],
    /// `8 · oc` bytes of batch-norm parameters.
    pub bn: &'a [u8],
    /// The 144-byte activation table.
    pub act: &'a [u8],
    /// The weights (`[oc][ic][k][k]`, or `[oc][k][k]` depthwise).
    pub weights: &'a [u8],
    /// Offset of `bn` in the model.
    pub bn_at: u32,
    /// Offset of `act` in the model.
    pub act_at: u32,
    /// Offset of `weights` in the model.
    pub weights_at: u32,
}

impl KpuConv<'_> {
    /// The words pushed into the layer argument FIFO for batch `batch`, with the model at bus
    /// address `model_at`: the stored registers with the three table addresses set to
    /// `model_at` + their offsets, the source and destination rows advanced by `batch` maps,
    /// `int_en` set (the layer signals `calc_done`) and `send_data_out` cleared (results stay
    /// in KPU RAM; the CPU copies what main memory needs). `None` when an address does not fit
    /// the 32-bit fields (checked by [`crate::kpu::KpuBackend::model_address`] implementations).
    pub fn words(&self, model_at: u32, batch: u32) -> Option<LayerWords> {
        let mut w = words_of(self.regs);
        let addr = |off: u32| model_at.checked_add(off).map(|a| (a as u64) << 32);
        let low = 0xffff_ffffu64;
        w[4] = (w[4] & low) | addr(self.bn_at)?;
        w[5] = (w[5] & low) | addr(self.weights_at)?;
        w[7] = (w[7] & low) | addr(self.act_at)?;
        w[0] |= 1;
        w[11] &= !1;
        let l = &self.layer;
        let src = l.src_row as u64 + batch as u64 * (l.in_map_bytes() / 64);
        let dst = l.dst_row as u64 + batch as u64 * (l.out_map_bytes() / 64);
        if src >= 1 << 15 || dst >= 1 << 15 {
            return None;
        }
        let rows = !(0x7fffu64 | (0x7fff << 32));
        w[1] = (w[1] & rows) | src | (dst << 32);
        Some(w)
    }
}

/// KPU pooling applied after the activation (`pool_type`). The output is `input / stride`
/// along each axis; window origin `(oy·stride, ox·stride)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolType {
    /// 0: copy.
    Bypass,
    /// 1: max 2×2 stride 2.
    Max2S2,
    /// 2: mean 2×2 stride 2 (edge-clamped taps).
    Mean2S2,
    /// 3: max 4×4 stride 4.
    Max4S4,
    /// 4: mean 4×4 stride 4.
    Mean4S4,
    /// 5: window element (0, 0), stride 2.
    LeftTop2S2,
    /// 6: window element (0, 1), stride 2.
    RightTop2S2,
    /// 7: window element (0, 0), stride 4.
    LeftTop4S4,
    /// 8: mean 2×2 stride 1.
    Mean2S1,
    /// 9: max 2×2 stride 1.
    Max2S1,
}

impl PoolType {
    /// From the register value.
    pub fn from_u8(v: u8) -> Option<PoolType> {
        Some(match v {
            0 => PoolType::Bypass,
            1 => PoolType::Max2S2,
            2 => PoolType::Mean2S2,
            3 => PoolType::Max4S4,
            4 => PoolType::Mean4S4,
            5 => PoolType::LeftTop2S2,
            6 => PoolType::RightTop2S2,
            7 => PoolType::LeftTop4S4,
            8 => PoolType::Mean2S1,
            9 => PoolType::Max2S1,
            _ => return None,
        })
    }

    /// (filter, stride).
    pub fn window(self) -> (u32, u32) {
        match self {
            PoolType::Bypass => (1, 1),
            PoolType::Max2S2 | PoolType::Mean2S2 | PoolType::LeftTop2S2 | PoolType::RightTop2S2 => (2, 2),
            PoolType::Max4S4 | PoolType::Mean4S4 | PoolType::LeftTop4S4 => (4, 4),
            PoolType::Mean2S1 | PoolType::Max2S1 => (2, 1),
        }
    }

    /// Output size along one axis.
    pub fn out_size(self, n: u32) -> u32 {
        n / self.window().1
    }
}
