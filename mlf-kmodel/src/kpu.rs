//! The K210 KPU: register decoding, the KPU RAM layout, and the convolution, batch-norm,
//! activation and pooling arithmetic (docs/kmodel.md §2.3, §6.3, §7, §8).
//!
//! One implementation serves V3 `K210_CONV` layers and V4 `kpu_conv2d` nodes.

use super::error::KmodelError;
use super::reader::u64_at;

/// KPU RAM size: 2 MiB, addressed in 64-byte rows (15-bit row numbers).
pub const KPU_RAM_BYTES: usize = 2 * 1024 * 1024;

/// How the activation's shift rounds and which segment a value falls in (docs/kmodel.md §8).
///
/// Both variants model the same hardware; nncase changed its simulator on 2019-08-02
/// (`kendryte/nncase@88c80d05`, "Update kpu kernels") from variant A to variant B, and every
/// later release (v0.2.x, v1.x) uses B. mlf follows the later, deliberate choice by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActivationRounding {
    /// nncase ≥ v0.2.0-alpha1 (and v1.x): segment = last with `x > start_x` (strict), shift
    /// with `carry_shift<int64_t, true>` ("banker" rounding of ties). The default.
    #[default]
    NncaseV02,
    /// nncase v0.1 C# emulator: segment = last with `start_x <= x`, shift with the SDK's
    /// `kpu_carry_shift` (ties round up for positive values).
    NncaseV01,
}

/// One of the 16 activation segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ActivationSegment {
    /// First input value of the segment (sign-extended from 36 bits).
    pub start_x: i64,
    /// Slope (sign-extended from 16 bits).
    pub mul: i64,
    /// Right shift applied to `(x - start_x) * mul`.
    pub shift: u32,
    /// Offset added after the shift.
    pub add: i64,
}

/// The decoded 144-byte activation table.
pub type ActivationTable = [ActivationSegment; 16];

/// Decodes an activation table (16 × u64 segments, then 16 `add` bytes).
pub fn decode_activation(bytes: &[u8]) -> ActivationTable {
    let mut t = [ActivationSegment::default(); 16];
    for (i, seg) in t.iter_mut().enumerate() {
        let v = u64_at(bytes, i * 8);
        seg.shift = (v & 0xff) as u32;
        seg.mul = sext((v >> 8) & 0xffff, 16);
        seg.start_x = sext((v >> 24) & ((1 << 36) - 1), 36);
        seg.add = bytes.get(128 + i).copied().unwrap_or(0) as i64;
    }
    t
}

/// Sign-extends the low `bits` bits of `v` (`bits` is taken as 1 to 64).
pub fn sext(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits.clamp(1, 64);
    ((v << shift) as i64) >> shift
}

/// The SDK's `kpu_carry_shift` (nncase v0.1's `CarryShift`): for `s > 0`, shift by `s - 1`,
/// then round on the last bit: up for non-negative values, `floor - 1` for negative odd ones.
/// Shifts above 64 give the result of 64 (as they would in wider arithmetic).
pub fn sdk_carry_shift(v: i64, s: u32) -> i64 {
    if s == 0 {
        return v;
    }
    let v = v >> (s.min(64) - 1);
    if v & 1 != 0 { if v < 0 { (v >> 1) - 1 } else { (v >> 1) + 1 } } else { v >> 1 }
}

/// nncase v0.2's `carry_shift<int64_t, true>` as written: ties go to the even neighbour of the
/// floored quotient, moved by the sign (so negative ties are not mathematical half-to-even).
/// Shifts above 63 act as 63 (undefined in the C++; the parser refuses activation shifts
/// above 31).
pub fn banker_shift(v: i64, s: u32) -> i64 {
    if s == 0 {
        return v;
    }
    let s = s.min(63);
    let integral = v >> s;
    let frac = (v as u64) & ((1u64 << s) - 1);
    let half = 1u64 << (s - 1);
    let sign = if v < 0 { -1 } else { 1 };
    // Below half: down; above half, or a tie with an odd quotient: away by the sign.
    if frac > half || (frac == half && integral & 1 != 0) { integral + sign } else { integral }
}

/// The KPU activation of one batch-normalised value: picks the segment and applies
/// `clamp(round_shift((x - start_x) * mul, shift) + add, 0, 255)` with the chosen rounding.
///
/// This is the one place where the two nncase generations disagree (docs/kmodel.md §8).
pub fn kpu_activation(x: i64, table: &ActivationTable, rounding: ActivationRounding) -> u8 {
    let (seg, shifted) = match rounding {
        ActivationRounding::NncaseV02 => {
            let seg = table.iter().rev().find(|s| x > s.start_x).unwrap_or(&table[0]);
            (seg, banker_shift(x.wrapping_sub(seg.start_x).wrapping_mul(seg.mul), seg.shift))
        }
        ActivationRounding::NncaseV01 => {
            let seg = table.iter().rev().find(|s| s.start_x <= x).unwrap_or(&table[0]);
            (seg, sdk_carry_shift(x.wrapping_sub(seg.start_x).wrapping_mul(seg.mul), seg.shift))
        }
    };
    shifted.wrapping_add(seg.add).clamp(0, 255) as u8
}

/// KPU pooling applied after the activation (`pool_type`, docs/kmodel.md §7.4).
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

/// Row layout of a feature map of width `w` in KPU RAM: (channels per row group, 64-byte
/// rows per image row, byte pitch between the channels of a group).
pub fn row_layout(w: u32) -> (u32, u32, u32) {
    if w <= 16 {
        (4, 1, 16)
    } else if w <= 32 {
        (2, 1, 32)
    } else {
        (1, w.div_ceil(64), 64)
    }
}

/// Bytes one C × H × W map occupies in KPU RAM (nn02 `get_kpu_bytes`).
pub fn map_bytes(w: u32, h: u32, c: u32) -> u64 {
    let (groups, row_len, _) = row_layout(w);
    // Saturating: V4 shapes come from the file and may be absurd (the caller then refuses them).
    (row_len as u64).saturating_mul(h as u64).saturating_mul(c.div_ceil(groups.min(c.max(1))) as u64).saturating_mul(64)
}

/// Byte offset of row `y` of channel `c` of a map of width `w`, height `h` (relative to the
/// map's start).
#[inline]
pub fn row_offset(w: u32, h: u32, c: u32, y: u32) -> usize {
    let (groups, row_len, pitch) = row_layout(w);
    ((c / groups) * row_len * h * 64 + (c % groups) * pitch + y * row_len * 64) as usize
}

/// Writes `n` compact u8 C × H × W maps into KPU RAM at byte `dst` with the KPU layout
/// (nn02 `kpu_upload`).
pub fn upload(src: &[u8], kpu: &mut [u8], dst: usize, n: u32, c: u32, h: u32, w: u32) {
    let fmap = map_bytes(w, h, c) as usize;
    let mut it = src.chunks_exact(w as usize);
    for b in 0..n as usize {
        for ch in 0..c {
            for y in 0..h {
                let o = dst + b * fmap + row_offset(w, h, ch, y);
                if let Some(row) = it.next() {
                    kpu[o..o + w as usize].copy_from_slice(row);
                }
            }
        }
    }
}

/// The fields of the 12 KPU layer registers an emulator needs, decoded and checked.
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
    /// `bwsx_base_addr` as stored (0 in V3; a skip count in V4).
    pub bwsx_base_addr: u32,
    /// `para_start_addr` as stored.
    pub para_start_addr: u32,
    /// `active_addr` as stored.
    pub active_addr: u32,
    /// `load_time + 1`: weight loads.
    pub loads: u32,
    /// Bytes per weight load.
    pub para_size: u32,
    /// `dma_total_byte + 1`: bytes sent to main memory when the output is copied there.
    pub dma_bytes: u32,
}

impl KpuLayer {
    /// Decodes and checks the 96 register bytes. Errors name the offending field.
    pub fn decode(regs: &[u8], index: u32) -> Result<KpuLayer, KmodelError> {
        let r = |i: usize| u64_at(regs, i * 8);
        let bad = |what| KmodelError::Invalid { index, what };
        if regs.len() < 96 {
            return Err(bad("layer registers are shorter than 96 bytes"));
        }
        let bits = |v: u64, at: u32, n: u32| ((v >> at) & ((1u64 << n) - 1)) as u32;
        let (r0, r1, r2, r3, r4, r5, r9, r10, r11) = (r(0), r(1), r(2), r(3), r(4), r(5), r(9), r(10), r(11));
        let kernel_type = bits(r4, 0, 3);
        let kernel = match kernel_type {
            0 => 1,
            1 => 3,
            _ => return Err(bad("kernel_type must be 0 (1x1) or 1 (3x3)")),
        };
        let pool = PoolType::from_u8(bits(r4, 4, 4) as u8).ok_or(bad("pool_type must be 0..=9"))?;
        let l = KpuLayer {
            depthwise: bits(r0, 3, 1) != 0,
            src_row: bits(r1, 0, 15),
            dst_row: bits(r1, 32, 15),
            in_c: bits(r2, 0, 10) + 1,
            out_c: bits(r2, 32, 10) + 1,
            in_w: bits(r3, 0, 10) + 1,
            in_h: bits(r3, 10, 9) + 1,
            out_w: bits(r3, 32, 10) + 1,
            out_h: bits(r3, 42, 9) + 1,
            kernel,
            pool,
            pad_value: bits(r4, 24, 8) as u8,
            shr_w: bits(r9, 0, 4),
            shr_x: bits(r9, 4, 4),
            arg_w: sext(bits(r9, 8, 24) as u64, 24),
            arg_x: sext(bits(r9, 32, 24) as u64, 24),
            arg_add: sext(r10 & ((1 << 40) - 1), 40),
            bwsx_base_addr: bits(r4, 32, 32),
            para_start_addr: bits(r5, 32, 32),
            active_addr: bits(r(7), 32, 32),
            loads: bits(r5, 1, 6) + 1,
            para_size: bits(r5, 15, 17),
            dma_bytes: bits(r11, 32, 32).wrapping_add(1),
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

    /// Scratch bytes [`conv`] needs (with 8 bytes of alignment slack).
    pub fn scratch_bytes(&self) -> u64 {
        let p = self.kernel as u64 - 1;
        let (pw, ph) = (self.in_w as u64 + p, self.in_h as u64 + p);
        let padded = self.in_c as u64 * pw * ph;
        let plane = self.in_w as u64 * self.in_h as u64;
        // padded input (u8), then i32 planes: channel sums (padded size), Σx, accumulator; then
        // the u8 activation plane.
        align4(padded) + 4 * (pw * ph) + 4 * plane * 2 + plane + 8 + 16
    }
}

fn align4(v: u64) -> u64 {
    (v + 3) & !3
}

/// A KPU convolution's data: registers plus the three tables.
#[derive(Clone, Copy, Debug)]
pub struct KpuConv<'a> {
    /// The decoded registers.
    pub layer: KpuLayer,
    /// `8 · oc` bytes of batch-norm parameters.
    pub bn: &'a [u8],
    /// The 144-byte activation table.
    pub act: &'a [u8],
    /// The weights (`[oc][ic][k][k]`, or `[oc][k][k]` depthwise).
    pub weights: &'a [u8],
}

/// Runs one batch of a KPU layer: downloads the input map at KPU byte `src`, convolves,
/// batch-normalises, activates and pools, writes the output map at KPU byte `dst`, and, when
/// `main_out` is given, also the compact u8 result there.
pub fn conv(
    cv: &KpuConv<'_>,
    kpu: &mut [u8],
    src: usize,
    dst: usize,
    scratch: &mut [u8],
    mut main_out: Option<&mut [u8]>,
    rounding: ActivationRounding,
) -> Result<(), KmodelError> {
    let l = &cv.layer;
    let (w, h, ic, oc) = (l.in_w as usize, l.in_h as usize, l.in_c as usize, l.out_c as usize);
    let k = l.kernel as usize;
    let p = k / 2;
    let (pw, ph) = (w + 2 * p, h + 2 * p);
    let plane = w * h;

    // Carve the scratch: padded input (u8), then 4-aligned i32 planes.
    let padded_len = ic * pw * ph;
    let skip = scratch.as_ptr().align_offset(4).min(scratch.len());
    let scratch = &mut scratch[skip..];
    let (pin, rest) = split(scratch, align4(padded_len as u64) as usize)?;
    let (chsum_b, rest) = split(rest, 4 * pw * ph)?;
    let (sumx_b, rest) = split(rest, 4 * plane)?;
    let (acc_b, rest) = split(rest, 4 * plane)?;
    let (act_plane, _) = split(rest, plane)?;
    let chsum = cast(chsum_b)?;
    let sumx = cast(sumx_b)?;
    let acc = cast(acc_b)?;
    let pin = &mut pin[..padded_len];

    // Download with a border of pad_value.
    pin.fill(l.pad_value);
    for c in 0..ic {
        for y in 0..h {
            let o = src + row_offset(l.in_w, l.in_h, c as u32, y as u32);
            let d = c * pw * ph + (y + p) * pw + p;
            pin[d..d + w].copy_from_slice(&kpu[o..o + w]);
        }
    }

    // Σx over all input channels and taps (the same for every output channel).
    if !l.depthwise {
        chsum.fill(0);
        for c in 0..ic {
            for (s, &v) in chsum.iter_mut().zip(&pin[c * pw * ph..(c + 1) * pw * ph]) {
                *s += v as i32;
            }
        }
        box_sum(chsum, pw, k, w, h, sumx);
    }

    let table = decode_activation(cv.act);
    let g_ic = if l.depthwise { 1 } else { ic as i64 };
    let k2 = k * k;
    let (pool_w, pool_h) = (l.out_w as usize, l.out_h as usize);
    for o in 0..oc {
        acc.fill(0);
        let (first_c, n_c) = if l.depthwise { (o, 1) } else { (0, ic) };
        let wbase = if l.depthwise { o * k2 } else { o * ic * k2 };
        let ws = &cv.weights[wbase..wbase + n_c * k2];
        let sum_w: i64 = ws.iter().map(|&v| v as i64).sum();
        if l.depthwise {
            chsum[..pw * ph].iter_mut().zip(&pin[o * pw * ph..(o + 1) * pw * ph]).for_each(|(s, &v)| *s = v as i32);
            box_sum(chsum, pw, k, w, h, sumx);
        }
        for ci in 0..n_c {
            let cin = &pin[(first_c + ci) * pw * ph..(first_c + ci + 1) * pw * ph];
            for ky in 0..k {
                for kx in 0..k {
                    let wv = ws[ci * k2 + ky * k + kx] as i32;
                    if wv == 0 {
                        continue;
                    }
                    for y in 0..h {
                        let row = &cin[(y + ky) * pw + kx..(y + ky) * pw + kx + w];
                        let arow = &mut acc[y * w..(y + 1) * w];
                        for (a, &x) in arow.iter_mut().zip(row) {
                            *a += wv * x as i32;
                        }
                    }
                }
            }
        }
        let bnv = u64_at(cv.bn, o * 8);
        let bn_mul = sext(bnv & 0xff_ffff, 24);
        let bn_add = sext((bnv >> 24) & 0xffff_ffff, 32);
        let bn_shift = ((bnv >> 56) & 0xf) as u32;
        let wterm = l.arg_w.wrapping_mul(sum_w) >> l.shr_w;
        let aterm = l.arg_add.wrapping_mul(g_ic);
        for i in 0..plane {
            let conv = (acc[i] as i64)
                .wrapping_add(l.arg_x.wrapping_mul(sumx[i] as i64) >> l.shr_x)
                .wrapping_add(wterm)
                .wrapping_add(aterm);
            let bn = (conv.wrapping_mul(bn_mul) >> bn_shift).wrapping_add(bn_add);
            act_plane[i] = kpu_activation(bn, &table, rounding);
        }
        // Pool straight into KPU RAM (and main memory).
        for oy in 0..pool_h {
            let d = dst + row_offset(l.out_w, l.out_h, o as u32, oy as u32);
            for ox in 0..pool_w {
                let v = pool_at(act_plane, w, h, l.pool, ox, oy);
                kpu[d + ox] = v;
                if let Some(m) = main_out.as_deref_mut() {
                    m[(o * pool_h + oy) * pool_w + ox] = v;
                }
            }
        }
    }
    Ok(())
}

fn cast(b: &mut [u8]) -> Result<&mut [i32], KmodelError> {
    bytemuck::try_cast_slice_mut(b).map_err(|_| KmodelError::MemoryTooSmall {
        pool: super::error::Pool::Scratch,
        needed: 0,
        got: 0,
    })
}

fn split(s: &mut [u8], n: usize) -> Result<(&mut [u8], &mut [u8]), KmodelError> {
    if n > s.len() {
        return Err(KmodelError::MemoryTooSmall {
            pool: super::error::Pool::Scratch,
            needed: n as u64,
            got: s.len() as u64,
        });
    }
    Ok(s.split_at_mut(n))
}

/// `out[y][x] = Σ_{ky,kx < k} src[(y + ky) · pw + x + kx]` for a padded plane of pitch `pw`.
fn box_sum(src: &[i32], pw: usize, k: usize, w: usize, h: usize, out: &mut [i32]) {
    for y in 0..h {
        let orow = &mut out[y * w..(y + 1) * w];
        orow.fill(0);
        for ky in 0..k {
            for kx in 0..k {
                let srow = &src[(y + ky) * pw + kx..(y + ky) * pw + kx + w];
                for (o, &s) in orow.iter_mut().zip(srow) {
                    *o += s;
                }
            }
        }
    }
}

/// One pooled value at output (ox, oy) of a `w × h` plane.
fn pool_at(p: &[u8], w: usize, h: usize, pool: PoolType, ox: usize, oy: usize) -> u8 {
    let (f, s) = pool.window();
    let (f, s) = (f as usize, s as usize);
    let (x0, y0) = (ox * s, oy * s);
    let at = |y: usize, x: usize| -> u32 { if y < h && x < w { p[y * w + x] as u32 } else { 0 } };
    match pool {
        PoolType::Bypass => p[y0 * w + x0],
        PoolType::Max2S2 | PoolType::Max4S4 | PoolType::Max2S1 => {
            let mut m = 0;
            for ky in 0..f {
                for kx in 0..f {
                    m = m.max(at(y0 + ky, x0 + kx));
                }
            }
            m as u8
        }
        PoolType::Mean2S2 | PoolType::Mean4S4 | PoolType::Mean2S1 => {
            let mut sum = 0u32;
            for ky in 0..f {
                for kx in 0..f {
                    let y = (y0 + ky).min(h - 1);
                    let x = (x0 + kx).min(w - 1);
                    sum += p[y * w + x] as u32;
                }
            }
            (sum / (f * f) as u32) as u8
        }
        PoolType::LeftTop2S2 | PoolType::LeftTop4S4 => at(y0, x0) as u8,
        PoolType::RightTop2S2 => at(y0, x0 + 1) as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one C × H × W map from KPU RAM at byte `src` into a compact buffer (nn02
    /// `kpu_download`).
    fn download(kpu: &[u8], src: usize, c: u32, h: u32, w: u32, out: &mut [u8]) {
        let mut it = out.chunks_exact_mut(w as usize);
        for ch in 0..c {
            for y in 0..h {
                let o = src + row_offset(w, h, ch, y);
                if let Some(row) = it.next() {
                    row.copy_from_slice(&kpu[o..o + w as usize]);
                }
            }
        }
    }

    #[test]
    fn banker_shift_matches_the_documented_examples() {
        assert_eq!(banker_shift(-5, 1), -4);
        assert_eq!(banker_shift(-5, 2), -3);
        assert_eq!(banker_shift(5, 1), 2);
        assert_eq!(banker_shift(7, 1), 4);
        assert_eq!(banker_shift(29, 1), 14); // 14.5 -> 14
        assert_eq!(banker_shift(31, 1), 16); // 15.5 -> 16
        assert_eq!(banker_shift(6, 2), 2); // 1.5 -> 2
        assert_eq!(banker_shift(10, 2), 2); // 2.5 -> 2
    }

    #[test]
    fn sdk_carry_shift_matches_the_documented_examples() {
        assert_eq!(sdk_carry_shift(-5, 1), -4);
        assert_eq!(sdk_carry_shift(-3, 1), -3);
        assert_eq!(sdk_carry_shift(-6, 2), -3);
        assert_eq!(sdk_carry_shift(29, 1), 15);
        assert_eq!(sdk_carry_shift(5, 0), 5);
    }

    #[test]
    fn every_shift_is_defined() {
        // The parser refuses activation shifts above 31; the public helpers take any value.
        assert_eq!(banker_shift(5, 64), banker_shift(5, 63));
        assert_eq!(banker_shift(-5, u32::MAX), banker_shift(-5, 63));
        assert_eq!(banker_shift(i64::MAX, 200), 1);
        assert_eq!(sdk_carry_shift(-5, 200), sdk_carry_shift(-5, 64));
        assert_eq!(sdk_carry_shift(i64::MIN, u32::MAX), -2);
        assert_eq!((sext(1, 0), sext(1, 1), sext(u64::MAX, 99)), (-1, -1, -1));
        let mut bytes = [0u8; 144];
        for seg in bytes[..128].chunks_exact_mut(8) {
            seg[0] = 0xff; // shift 255
        }
        let t = decode_activation(&bytes);
        assert_eq!(t[3].shift, 255);
        for r in [ActivationRounding::NncaseV02, ActivationRounding::NncaseV01] {
            assert_eq!(kpu_activation(1 << 40, &t, r), 0);
        }
    }

    #[test]
    fn layout() {
        assert_eq!(row_layout(10), (4, 1, 16));
        assert_eq!(row_layout(28), (2, 1, 32));
        assert_eq!(row_layout(320), (1, 5, 64));
        assert_eq!(map_bytes(320, 240, 3), 5 * 240 * 3 * 64);
        assert_eq!(map_bytes(4, 4, 32), 4 * 8 * 64);
        assert_eq!(row_offset(10, 7, 5, 2), 7 * 64 + 16 + 2 * 64);
        let src: [u8; 2 * 2 * 3] = core::array::from_fn(|i| i as u8 + 1);
        let mut kpu = [0u8; 256];
        upload(&src, &mut kpu, 64, 1, 3, 2, 2);
        let mut back = [0u8; 12];
        download(&kpu, 64, 3, 2, 2, &mut back);
        assert_eq!(back, src);
        assert_eq!(kpu[64 + 16], 5);
    }

    #[test]
    fn activation_segments() {
        let mut t = [ActivationSegment::default(); 16];
        for (i, s) in t.iter_mut().enumerate() {
            s.start_x = if i == 0 { -(1 << 35) } else { 0 };
            s.mul = 1;
            s.shift = 1;
        }
        // x = 29 - 0: strict > picks segment 15 (start 0); 29 >> 1 with ties: 14.5
        assert_eq!(kpu_activation(29, &t, ActivationRounding::NncaseV02), 14);
        assert_eq!(kpu_activation(29, &t, ActivationRounding::NncaseV01), 15);
        // x = 0: V02 (strict) falls to segment 0; V01 takes segment 15.
        t[0].add = 7;
        assert_eq!(kpu_activation(0, &t, ActivationRounding::NncaseV01), 0);
        assert_eq!(kpu_activation(0, &t, ActivationRounding::NncaseV02), 255);
    }
}
