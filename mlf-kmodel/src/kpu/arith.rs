//! The KPU's arithmetic, bit-exact with nncase v0.2's simulator
//! (`kendryte/nncase@v0.2.0-beta4`, `src/common/include/kernels/k210/k210_kernels.h`):
//! convolution with the `arg_x`/`arg_w`/`arg_add` terms, batch normalisation, the 16-segment
//! activation and pooling, for one batch of one layer.
//!
//! Per output channel `oc` and input position `(y, x)`, with taps out of the image reading
//! `pad_value`, `g_ic` = 1 for a depthwise layer and IC otherwise:
//!
//! ```text
//! conv = Σ x·w + ((arg_x · Σx) >> shr_x) + ((arg_w · Σw) >> shr_w) + arg_add · g_ic   (i64, >> floors)
//! bn   = ((conv · norm_mul) >> norm_shift) + norm_add
//! out  = clamp(round_shift((bn − start_x[seg]) · mul[seg], shift[seg]) + add[seg], 0, 255)
//! ```
//!
//! then pooled. The batch-norm table is `oc` × u64 {norm_mul:24@0 signed, norm_add:32@24
//! signed, norm_shift:4@56}; the activation table 16 × u64 {shift:8@0, y_mul:16@8 signed,
//! x_start:36@24 signed} followed by 16 bytes of per-segment `add`.

use crate::error::{KmodelError, Pool};
use crate::reader::u64_at;

use super::layout::row_offset;
use super::regs::{KpuLayer, PoolType, align4, sext};

/// How the activation's shift rounds and which segment a value falls in.
///
/// Both variants model the same hardware; nncase changed its simulator on 2019-08-02
/// (`kendryte/nncase@88c80d05`, "Update kpu kernels") from variant A (v0.1) to variant B, and
/// every later release (v0.2.x, v1.x) uses B. mlf follows the later, deliberate choice by
/// default. The two disagree on ties, which decides bit-exactness.
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

/// Activation shifts above 31 are undefined in nncase's C++ (a 32-bit `int` shift), so a
/// model that has one is refused.
pub fn check_act_shifts(index: u32, act: &[u8]) -> Result<(), KmodelError> {
    match decode_activation(act).iter().any(|s| s.shift > 31) {
        true => Err(KmodelError::Invalid { index, what: "activation shift above 31" }),
        false => Ok(()),
    }
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
/// This is the one place where the two nncase generations disagree.
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

/// The three tables of a layer, read from where its words point.
#[derive(Clone, Copy, Debug)]
pub struct Tables<'a> {
    /// `8 · oc` bytes of batch-norm parameters.
    pub bn: &'a [u8],
    /// The 144-byte activation table.
    pub act: &'a [u8],
    /// The weights (`[oc][ic][k][k]`, or `[oc][k][k]` depthwise).
    pub weights: &'a [u8],
}

/// The scratch planes of one convolution, carved from the caller's scratch memory.
struct Planes<'s> {
    /// The input with a border of `pad_value`, channel by channel.
    padded: &'s mut [u8],
    /// Per-pixel sums over channels of the padded input.
    chsum: &'s mut [i32],
    /// Σx over each output position's window.
    sumx: &'s mut [i32],
    /// Σ x·w of one output channel.
    acc: &'s mut [i32],
    /// One activated output channel before pooling.
    act: &'s mut [u8],
}

/// Runs one batch of a KPU layer: reads the input map at KPU byte `src`, convolves,
/// batch-normalises, activates, pools and writes the output map at KPU byte `dst`.
/// `kpu` must hold both maps and `scratch` [`KpuLayer::scratch_bytes`] bytes.
pub fn conv(
    l: &KpuLayer,
    t: &Tables<'_>,
    kpu: &mut [u8],
    (src, dst): (usize, usize),
    scratch: &mut [u8],
    rounding: ActivationRounding,
) -> Result<(), KmodelError> {
    let (w, h, ic) = (l.in_w as usize, l.in_h as usize, l.in_c as usize);
    let k = l.kernel as usize;
    let (pw, ph) = (w + k - 1, h + k - 1);
    let p = carve(scratch, ic * pw * ph, pw * ph, w * h)?;
    load_padded(l, kpu, src, p.padded);
    if !l.depthwise {
        // Σx over all input channels and taps is the same for every output channel.
        p.chsum.fill(0);
        for c in 0..ic {
            for (s, &v) in p.chsum.iter_mut().zip(&p.padded[c * pw * ph..(c + 1) * pw * ph]) {
                *s += v as i32;
            }
        }
        box_sum(p.chsum, pw, k, w, h, p.sumx);
    }
    let table = decode_activation(t.act);
    for o in 0..l.out_c as usize {
        if l.depthwise {
            let plane = &p.padded[o * pw * ph..(o + 1) * pw * ph];
            p.chsum.iter_mut().zip(plane).for_each(|(s, &v)| *s = v as i32);
            box_sum(p.chsum, pw, k, w, h, p.sumx);
        }
        let sum_w = accumulate(l, t.weights, p.padded, o, p.acc);
        activate(l, u64_at(t.bn, o * 8), sum_w, &table, rounding, (p.acc, p.sumx), p.act);
        for oy in 0..l.out_h as usize {
            let d = dst + row_offset(l.out_w, l.out_h, o as u32, oy as u32);
            for ox in 0..l.out_w as usize {
                kpu[d + ox] = pool_at(p.act, w, h, l.pool, ox, oy);
            }
        }
    }
    Ok(())
}

/// Splits `scratch` (4-aligned first) into the planes of a convolution.
fn carve(scratch: &mut [u8], padded: usize, padded_plane: usize, plane: usize) -> Result<Planes<'_>, KmodelError> {
    let skip = scratch.as_ptr().align_offset(4).min(scratch.len());
    let scratch = &mut scratch[skip..];
    let (pin, rest) = split(scratch, align4(padded as u64) as usize)?;
    let (chsum, rest) = split(rest, 4 * padded_plane)?;
    let (sumx, rest) = split(rest, 4 * plane)?;
    let (acc, rest) = split(rest, 4 * plane)?;
    let (act, _) = split(rest, plane)?;
    Ok(Planes { padded: &mut pin[..padded], chsum: cast(chsum)?, sumx: cast(sumx)?, acc: cast(acc)?, act })
}

/// Copies the input map at KPU byte `src` into `padded`, inside a border of `pad_value`.
fn load_padded(l: &KpuLayer, kpu: &[u8], src: usize, padded: &mut [u8]) {
    let (w, h) = (l.in_w as usize, l.in_h as usize);
    let p = l.kernel as usize / 2;
    let (pw, ph) = (w + 2 * p, h + 2 * p);
    padded.fill(l.pad_value);
    for c in 0..l.in_c as usize {
        for y in 0..h {
            let o = src + row_offset(l.in_w, l.in_h, c as u32, y as u32);
            let d = c * pw * ph + (y + p) * pw + p;
            padded[d..d + w].copy_from_slice(&kpu[o..o + w]);
        }
    }
}

/// `acc` = Σ x·w of output channel `o` at every input position; returns Σw of its taps.
fn accumulate(l: &KpuLayer, weights: &[u8], padded: &[u8], o: usize, acc: &mut [i32]) -> i64 {
    let (w, h, ic, k) = (l.in_w as usize, l.in_h as usize, l.in_c as usize, l.kernel as usize);
    let (pw, ph, k2) = (w + k - 1, h + k - 1, k * k);
    let (first_c, n_c) = if l.depthwise { (o, 1) } else { (0, ic) };
    let wbase = if l.depthwise { o * k2 } else { o * ic * k2 };
    let ws = &weights[wbase..wbase + n_c * k2];
    acc.fill(0);
    for ci in 0..n_c {
        let cin = &padded[(first_c + ci) * pw * ph..(first_c + ci + 1) * pw * ph];
        for ky in 0..k {
            for kx in 0..k {
                let wv = ws[ci * k2 + ky * k + kx] as i32;
                if wv == 0 {
                    continue;
                }
                for y in 0..h {
                    let row = &cin[(y + ky) * pw + kx..(y + ky) * pw + kx + w];
                    for (a, &x) in acc[y * w..(y + 1) * w].iter_mut().zip(row) {
                        *a += wv * x as i32;
                    }
                }
            }
        }
    }
    ws.iter().map(|&v| v as i64).sum()
}

/// Adds the `arg` terms, batch-normalises with the u64 `bn` entry and activates every
/// position of one output channel into `out`.
fn activate(
    l: &KpuLayer,
    bn: u64,
    sum_w: i64,
    table: &ActivationTable,
    rounding: ActivationRounding,
    (acc, sumx): (&[i32], &[i32]),
    out: &mut [u8],
) {
    let bn_mul = sext(bn & 0xff_ffff, 24);
    let bn_add = sext((bn >> 24) & 0xffff_ffff, 32);
    let bn_shift = ((bn >> 56) & 0xf) as u32;
    let wterm = l.arg_w.wrapping_mul(sum_w) >> l.shr_w;
    let aterm = l.arg_add.wrapping_mul(if l.depthwise { 1 } else { l.in_c as i64 });
    for ((o, &a), &sx) in out.iter_mut().zip(acc).zip(sumx) {
        let conv =
            (a as i64).wrapping_add(l.arg_x.wrapping_mul(sx as i64) >> l.shr_x).wrapping_add(wterm).wrapping_add(aterm);
        let bn = (conv.wrapping_mul(bn_mul) >> bn_shift).wrapping_add(bn_add);
        *o = kpu_activation(bn, table, rounding);
    }
}

fn cast(b: &mut [u8]) -> Result<&mut [i32], KmodelError> {
    bytemuck::try_cast_slice_mut(b).map_err(|_| KmodelError::MemoryTooSmall { pool: Pool::Scratch, needed: 0, got: 0 })
}

fn split(s: &mut [u8], n: usize) -> Result<(&mut [u8], &mut [u8]), KmodelError> {
    if n > s.len() {
        return Err(KmodelError::MemoryTooSmall { pool: Pool::Scratch, needed: n as u64, got: s.len() as u64 });
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

/// One pooled value at output (ox, oy) of a `w × h` plane. Max pools count out-of-range taps
/// as 0; mean pools clamp tap coordinates to the edge and divide (floor) by the tap count;
/// the "take" pools read one window element (out of range: 0).
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
                    sum += p[(y0 + ky).min(h - 1) * w + (x0 + kx).min(w - 1)] as u32;
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
        assert!(check_act_shifts(0, &bytes).is_err());
        for r in [ActivationRounding::NncaseV02, ActivationRounding::NncaseV01] {
            assert_eq!(kpu_activation(1 << 40, &t, r), 0);
        }
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
