//! Window reductions, resizing, and the window geometry shared with the convolutions.

use crate::decode::v4::{Clamp, MemRange, Shape, Window};
use crate::float::{max_f, min_f};
use crate::types::DataType;

use super::mem::Mem;

/// One window axis at position `p` (an output position; an input position for
/// conv2d_transpose) of an axis of size `n`: the origin `p · stride − pad` and the taps
/// `[start, end)` that land inside `0..n` (nncase's integer expressions, C division). In i64:
/// positions up to 2^24 times strides up to 4096 do not fit i32.
#[inline]
fn axis(p: usize, n: u32, stride: i32, pad: i32, f: i32, d: i32) -> (i64, i64, i64) {
    let origin = p as i64 * stride as i64 - pad as i64;
    let d = d as i64;
    let start = 0.max((-origin + d - 1) / d);
    let end = (f as i64).min((n as i64 - origin + d - 1) / d);
    (origin, start, end)
}

/// The window's H and W axes at position (`y`, `x`) of an `h × w` plane (see [`axis`]).
#[inline]
pub(super) fn window_at(win: &Window, y: usize, x: usize, h: u32, w: u32) -> [(i64, i64, i64); 2] {
    [
        axis(y, h, win.stride.0, win.pad_h.before, win.filter.0, win.dilation.0),
        axis(x, w, win.stride.1, win.pad_w.before, win.filter.1, win.dilation.1),
    ]
}

/// `reduce_window2d` (NCHW) and `cpu_reduce_window2d` (NHWC): windows skip out-of-range taps;
/// mean divides by the count of valid taps; then the clamp.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_window2d(
    m: &mut Mem<'_>,
    input: &MemRange,
    output: &MemRange,
    op: u32,
    s: &Shape,
    win: &Window,
    init: f32,
    act: Clamp,
    nhwc: bool,
) {
    let (h, w, c) = if nhwc { (s[1], s[2], s[3]) } else { (s[2], s[3], s[1]) };
    let (oh, ow) = win.out_hw(h, w);
    let (oh, ow) = (oh.max(0) as usize, ow.max(0) as usize);
    let window = |m: &Mem<'_>, batch: usize, ch: usize, oy: usize, ox: usize| -> f32 {
        let [(y0, ky0, ky1), (x0, kx0, kx1)] = window_at(win, oy, ox, h, w);
        let mut v = init;
        let mut k = 0i32;
        for ky in ky0..ky1 {
            for kx in kx0..kx1 {
                let iy = (y0 + win.dilation.0 as i64 * ky) as usize;
                let ix = (x0 + win.dilation.1 as i64 * kx) as usize;
                let idx = if nhwc {
                    ((batch * h as usize + iy) * w as usize + ix) * c as usize + ch
                } else {
                    ((batch * c as usize + ch) * h as usize + iy) * w as usize + ix
                };
                let x = m.f(input, idx);
                v = match op {
                    0 | 3 => v + x,
                    1 => min_f(v, x),
                    _ => max_f(v, x),
                };
                k += 1;
            }
        }
        act.apply(if op == 0 { v / k as f32 } else { v })
    };
    for batch in 0..s[0] as usize {
        if nhwc {
            for oy in 0..oh {
                for ox in 0..ow {
                    for ch in 0..c as usize {
                        let v = window(m, batch, ch, oy, ox);
                        m.set_f(output, ((batch * oh + oy) * ow + ox) * c as usize + ch, v);
                    }
                }
            }
        } else {
            for ch in 0..c as usize {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let v = window(m, batch, ch, oy, ox);
                        m.set_f(output, ((batch * c as usize + ch) * oh + oy) * ow + ox, v);
                    }
                }
            }
        }
    }
}

/// `resize_image`: nearest neighbour (`floor(o · in / out)`, clamped) or bilinear (weights
/// `(1 − dy)(1 − dx)` …; u8 results truncate).
#[allow(clippy::too_many_arguments)]
pub(super) fn resize(
    m: &mut Mem<'_>,
    input: &MemRange,
    output: &MemRange,
    s: &Shape,
    out_h: u32,
    out_w: u32,
    bilinear: bool,
    align_corners: bool,
) {
    let (h, w) = (s[2] as usize, s[3] as usize);
    let mut hs = s[2] as f32 / out_h as f32;
    let mut ws = s[3] as f32 / out_w as f32;
    let u8_data = input.dtype == DataType::U8;
    let e = input.dtype.bytes();
    let mut o = 0usize;
    if !bilinear {
        for c in 0..s[0] as usize * s[1] as usize {
            for oy in 0..out_h as usize {
                let iy = (libm::floorf(oy as f32 * hs) as i32).min(h as i32 - 1) as usize;
                for ox in 0..out_w as usize {
                    let ix = (libm::floorf(ox as f32 * ws) as i32).min(w as i32 - 1) as usize;
                    m.copy_elem(input, (c * h + iy) * w + ix, output, o, e);
                    o += 1;
                }
            }
        }
        return;
    }
    if align_corners && out_h > 1 {
        hs = (s[2] as f32 - 1.0) / (out_h as f32 - 1.0);
    }
    if align_corners && out_w > 1 {
        ws = (s[3] as f32 - 1.0) / (out_w as f32 - 1.0);
    }
    let get = |m: &Mem<'_>, i: usize| if u8_data { m.u(input, i) as f32 } else { m.f(input, i) };
    for c in 0..s[0] as usize * s[1] as usize {
        let base = c * h * w;
        for oy in 0..out_h as usize {
            let in_y = oy as f32 * hs;
            // In f32 the last row's position can round up to `h` (nncase then reads past the
            // input): clamped, as the nearest-neighbour mode clamps.
            let y0 = (libm::floorf(in_y) as usize).min(h - 1);
            let y1 = (y0 + 1).min(h - 1);
            for ox in 0..out_w as usize {
                let in_x = ox as f32 * ws;
                let x0 = (libm::floorf(in_x) as usize).min(w - 1);
                let x1 = (x0 + 1).min(w - 1);
                let (v0, v1, v2, v3) = (
                    get(m, base + y0 * w + x0),
                    get(m, base + y1 * w + x0),
                    get(m, base + y0 * w + x1),
                    get(m, base + y1 * w + x1),
                );
                let (dy, dx) = (in_y - y0 as f32, in_x - x0 as f32);
                let a0 = (1.0 - dy) * (1.0 - dx);
                let a1 = dy * (1.0 - dx);
                let a2 = (1.0 - dy) * dx;
                let a3 = dy * dx;
                let v = v0 * a0 + v1 * a1 + v2 * a2 + v3 * a3;
                if u8_data {
                    m.set_u(output, o, v as u8);
                } else {
                    m.set_f(output, o, v);
                }
                o += 1;
            }
        }
    }
}
