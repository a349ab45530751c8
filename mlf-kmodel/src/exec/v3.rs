//! Runs V3 layers on the CPU: the Kendryte standalone SDK's CPU layers (`lib/drivers/kpu.c`,
//! `ai_step` and the functions it calls) in IEEE f32 without fused multiply-add, and the layers
//! that write KPU RAM (`K210_ADD_PADDING`, `K210_UPLOAD`) through the CPU's view of it.
//! `K210_CONV` runs on a KPU backend (`crate::exec`).

use crate::decode::v3::{Layer, Pool2d};
use crate::kpu::{sdk_carry_shift, upload};
use crate::reader::{f32_at, u32_at};

#[inline]
fn rf(m: &[u8], addr: u32, i: usize) -> f32 {
    let o = addr as usize + 4 * i;
    f32::from_le_bytes([m[o], m[o + 1], m[o + 2], m[o + 3]])
}

#[inline]
fn wf(m: &mut [u8], addr: u32, i: usize, v: f32) {
    let o = addr as usize + 4 * i;
    m[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn ru(m: &[u8], addr: u32, i: usize) -> u8 {
    m[addr as usize + i]
}

#[inline]
fn wu(m: &mut [u8], addr: u32, i: usize, v: u8) {
    m[addr as usize + i] = v;
}

/// Runs one layer other than `K210_CONV`. Addresses were checked when the model was parsed;
/// `kpu_ram` is KPU RAM as the CPU sees it.
pub(crate) fn run_layer(l: &Layer<'_>, main: &mut [u8], kpu_ram: &mut [u8]) {
    match *l {
        Layer::Add { a, b, output, count } => {
            for i in 0..count as usize {
                let v = rf(main, a, i) + rf(main, b, i);
                wf(main, output, i, v);
            }
        }
        Layer::QuantizedAdd { .. } => quantized_add(l, main),
        Layer::GlobalAveragePool2d { input, output, kernel_size, channels } => {
            let mut src = 0usize;
            for oc in 0..channels as usize {
                let mut sum = 0f32;
                for _ in 0..kernel_size {
                    sum += rf(main, input, src);
                    src += 1;
                }
                wf(main, output, oc, sum / kernel_size as f32);
            }
        }
        Layer::QuantizedMaxPool2d(p) => pool2d(main, &p, true),
        Layer::AveragePool2d(p) => pool2d(main, &p, false),
        Layer::Quantize { input, output, count, scale, bias } => {
            let scale = 1.0f32 / scale;
            for i in 0..count as usize {
                let v = libm::roundf((rf(main, input, i) - bias) * scale) as i32;
                wu(main, output, i, v.clamp(0, 255) as u8);
            }
        }
        Layer::Dequantize { input, output, count, scale, bias } => {
            for i in 0..count as usize {
                let v = ru(main, input, i) as f32 * scale + bias;
                wf(main, output, i, v);
            }
        }
        Layer::Requantize { input, output, count, table } => {
            for i in 0..count as usize {
                let v = table[ru(main, input, i) as usize];
                wu(main, output, i, v);
            }
        }
        Layer::L2Normalization { input, output, channels } => l2_normalization(main, input, output, channels),
        Layer::Softmax { input, output, channels } => softmax(main, input, output, channels),
        Layer::Concat { output, inputs } => {
            let mut dst = output as usize;
            for p in inputs.chunks_exact(8) {
                let (start, size) = (u32_at(p, 0) as usize, u32_at(p, 4) as usize);
                main.copy_within(start..start + size, dst);
                dst += size;
            }
        }
        Layer::FullyConnected { .. } => fully_connected(l, main),
        _ => run_shaped(l, main, kpu_ram),
    }
}

/// [`run_layer`] for the layers with shapes and the ones that touch KPU RAM.
fn run_shaped(l: &Layer<'_>, main: &mut [u8], kpu_ram: &mut [u8]) {
    match *l {
        Layer::TfFlatten { input, output, shape } => {
            // NCHW → NHWC.
            let (w, h, c) = (shape.w as usize, shape.h as usize, shape.c as usize);
            let mut o = 0;
            for y in 0..h {
                for x in 0..w {
                    for ch in 0..c {
                        let v = rf(main, input, (ch * h + y) * w + x);
                        wf(main, output, o, v);
                        o += 1;
                    }
                }
            }
        }
        Layer::ResizeNearest { .. } => resize_nearest(l, main),
        Layer::ChannelwiseDequantize { input, output, channels, channel_size, params } => {
            let mut i = 0;
            for c in 0..channels as usize {
                let (scale, bias) = (f32_at(params, 8 * c), f32_at(params, 8 * c + 4));
                for _ in 0..channel_size {
                    let v = ru(main, input, i) as f32 * scale + bias;
                    wf(main, output, i, v);
                    i += 1;
                }
            }
        }
        Layer::Logistic { input, output, channels } => {
            for i in 0..channels as usize {
                let v = 1.0f32 / (1.0f32 + libm::expf(-rf(main, input, i)));
                wf(main, output, i, v);
            }
        }
        Layer::K210AddPadding { input, kpu_row, channels } => {
            // Pixel (0, 0) of each channel of a C × 4 × 4 map (4 channels per 64-byte row).
            let base = kpu_row as usize * 64;
            for c in 0..channels as usize {
                kpu_ram[base + (c / 4) * 256 + (c % 4) * 16] = ru(main, input, c);
            }
        }
        Layer::K210RemovePadding { input, output, channels } => {
            for c in 0..channels as usize {
                let v = ru(main, input, c * 16);
                wu(main, output, c, v);
            }
        }
        Layer::K210Upload { input, kpu_row, shape } => {
            let n = shape.numel() as usize;
            let src = &main[input as usize..input as usize + n];
            upload(src, kpu_ram, kpu_row as usize * 64, 1, shape.c, shape.h, shape.w);
        }
        _ => {}
    }
}

/// `QUANTIZED_ADD`, in i64: with equal input shifts the scaled inputs are added before the
/// shift, otherwise each is shifted; then `kpu_carry_shift(v · out_mul, out_shift) + out_offset`,
/// clamped to u8.
fn quantized_add(l: &Layer<'_>, main: &mut [u8]) {
    let Layer::QuantizedAdd {
        a,
        b,
        output,
        count,
        a_off,
        a_mul,
        a_shift,
        b_off,
        b_mul,
        b_shift,
        o_off,
        o_mul,
        o_shift,
    } = *l
    else {
        return;
    };
    for i in 0..count as usize {
        let x = (ru(main, a, i) as i64 + a_off as i64).wrapping_mul(a_mul as i64);
        let y = (ru(main, b, i) as i64 + b_off as i64).wrapping_mul(b_mul as i64);
        let v =
            if a_shift == b_shift { x.wrapping_add(y) >> a_shift } else { (x >> a_shift).wrapping_add(y >> b_shift) };
        let v = sdk_carry_shift(v.wrapping_mul(o_mul as i64), o_shift as u32).wrapping_add(o_off as i64);
        wu(main, output, i, v.clamp(0, 255) as u8);
    }
}

/// `sum = Σ x²` (at least 1e-10), `out = x · (1 / sqrtf(sum))`.
fn l2_normalization(main: &mut [u8], input: u32, output: u32, channels: u32) {
    let n = channels as usize;
    let mut sum = 0f32;
    for i in 0..n {
        let x = rf(main, input, i);
        sum += x * x;
    }
    if sum < 1e-10 {
        sum = 1e-10;
    }
    let k = 1.0f32 / libm::sqrtf(sum);
    for i in 0..n {
        let v = rf(main, input, i) * k;
        wf(main, output, i, v);
    }
}

/// The SDK's softmax: the max starts at `FLT_MIN` (the smallest positive float), then
/// `e_i = expf(x_i − max)` summed in order, `out_i = e_i / sum`.
fn softmax(main: &mut [u8], input: u32, output: u32, channels: u32) {
    let n = channels as usize;
    let mut max = f32::MIN_POSITIVE;
    for i in 0..n {
        max = max.max(rf(main, input, i));
    }
    let mut sum = 0f32;
    for i in 0..n {
        let e = libm::expf(rf(main, input, i) - max);
        sum += e;
        wf(main, output, i, e);
    }
    for i in 0..n {
        let v = rf(main, output, i) / sum;
        wf(main, output, i, v);
    }
}

/// f32 dense layer: sequential sums, then the bias and ReLU (1) or ReLU6 (2).
fn fully_connected(l: &Layer<'_>, main: &mut [u8]) {
    let Layer::FullyConnected { input, output, in_channels, out_channels, act, weights, bias } = *l else {
        return;
    };
    let ic = in_channels as usize;
    for oc in 0..out_channels as usize {
        let mut sum = 0f32;
        for i in 0..ic {
            sum += rf(main, input, i) * f32_at(weights, 4 * (oc * ic + i));
        }
        let mut v = sum + f32_at(bias, 4 * oc);
        if act == 1 {
            v = v.max(0.0);
        } else if act == 2 {
            #[allow(clippy::manual_clamp)] // SDK: min(max(x, 0), 6); `clamp` would keep NaN
            {
                v = v.max(0.0).min(6.0);
            }
        }
        wf(main, output, oc, v);
    }
}

/// Nearest-neighbour resize, f32 or u8: `in = min(floorf(o · in_size / out_size), in_size − 1)`.
fn resize_nearest(l: &Layer<'_>, main: &mut [u8]) {
    let Layer::ResizeNearest { input, output, in_shape, out_w, out_h, quantized } = *l else {
        return;
    };
    let hs = in_shape.h as f32 / out_h as f32;
    let ws = in_shape.w as f32 / out_w as f32;
    let (w, h) = (in_shape.w as usize, in_shape.h as usize);
    let mut o = 0;
    for c in 0..in_shape.c as usize {
        for oy in 0..out_h as usize {
            let iy = (libm::floorf(oy as f32 * hs) as usize).min(h - 1);
            for ox in 0..out_w as usize {
                let ix = (libm::floorf(ox as f32 * ws) as usize).min(w - 1);
                let src = (c * h + iy) * w + ix;
                if quantized {
                    let v = ru(main, input, src);
                    wu(main, output, o, v);
                } else {
                    let v = rf(main, input, src);
                    wf(main, output, o, v);
                }
                o += 1;
            }
        }
    }
}

/// `QUANTIZED_MAX_POOL2D` (u8, max from 0) and `AVERAGE_POOL2D` (f32, mean of in-bounds taps).
fn pool2d(main: &mut [u8], p: &Pool2d, quantized_max: bool) {
    let (iw, ih) = (p.in_shape.w as i64, p.in_shape.h as i64);
    let (kw, kh) = (p.kernel.0 as i64, p.kernel.1 as i64);
    let mut o = 0usize;
    for oc in 0..p.out_shape.c as usize {
        let ch = oc * (iw * ih) as usize;
        for oy in 0..p.out_shape.h as i64 {
            for ox in 0..p.out_shape.w as i64 {
                let x0 = ox * p.stride.0 as i64 - p.padding.0 as i64;
                let y0 = oy * p.stride.1 as i64 - p.padding.1 as i64;
                let (kx0, kx1) = (0.max(-x0), kw.min(iw - x0));
                let (ky0, ky1) = (0.max(-y0), kh.min(ih - y0));
                if quantized_max {
                    let mut v = 0u8;
                    for ky in ky0..ky1 {
                        for kx in kx0..kx1 {
                            v = v.max(ru(main, p.input, ch + ((y0 + ky) * iw + x0 + kx) as usize));
                        }
                    }
                    wu(main, p.output, o, v);
                } else {
                    let (mut v, mut n) = (0f32, 0f32);
                    for ky in ky0..ky1 {
                        for kx in kx0..kx1 {
                            v += rf(main, p.input, ch + ((y0 + ky) * iw + x0 + kx) as usize);
                            n += 1.0;
                        }
                    }
                    wf(main, p.output, o, v / n);
                }
                o += 1;
            }
        }
    }
}
