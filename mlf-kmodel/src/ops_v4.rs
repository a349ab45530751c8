//! Runs V4 nodes: nncase v0.2's neutral and CPU kernels (`neutral_kernels.h`,
//! `cpu_kernels.h`, docs/kmodel.md §10) in IEEE f32 without FMA, and the K210 nodes through the
//! KPU emulation.

use super::DataType;
use super::error::{KmodelError, Pool};
use super::kpu::{self, ActivationRounding};
use super::reader::{f32_at, u32_at};
use super::v4::{Clamp, MemRange, Node, Padding, Requant, Shape, Window, concat_parts, numel, slice_len};

/// The three pools a node can touch.
pub(crate) struct Mem<'x> {
    pub consts: &'x [u8],
    pub main: &'x mut [u8],
    pub kpu: &'x mut [u8],
}

impl Mem<'_> {
    #[inline]
    fn buf(&self, p: Pool) -> &[u8] {
        match p {
            Pool::Constants => self.consts,
            Pool::Main => self.main,
            _ => self.kpu,
        }
    }
    #[inline]
    fn buf_mut(&mut self, p: Pool) -> &mut [u8] {
        match p {
            Pool::Kpu => self.kpu,
            // Output ranges in the constants pool are refused when the model is parsed.
            _ => self.main,
        }
    }
    #[inline]
    fn f(&self, r: &MemRange, i: usize) -> f32 {
        let o = r.start as usize + 4 * i;
        let b = self.buf(r.pool);
        f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
    }
    #[inline]
    fn set_f(&mut self, r: &MemRange, i: usize, v: f32) {
        let o = r.start as usize + 4 * i;
        self.buf_mut(r.pool)[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn u(&self, r: &MemRange, i: usize) -> u8 {
        self.buf(r.pool)[r.start as usize + i]
    }
    #[inline]
    fn set_u(&mut self, r: &MemRange, i: usize, v: u8) {
        let o = r.start as usize + i;
        self.buf_mut(r.pool)[o] = v;
    }
    /// Copies element `si` of `s` to element `di` of `d` (`e` bytes each).
    #[inline]
    fn copy_elem(&mut self, s: &MemRange, si: usize, d: &MemRange, di: usize, e: usize) {
        let mut tmp = [0u8; 4];
        let so = s.start as usize + si * e;
        tmp[..e].copy_from_slice(&self.buf(s.pool)[so..so + e]);
        let o = d.start as usize + di * e;
        self.buf_mut(d.pool)[o..o + e].copy_from_slice(&tmp[..e]);
    }
    /// Copies `n` bytes from `s.start + so` to `d.start + dof`. The destination is the pool
    /// `d` names (as in [`Mem::buf_mut`]); copying 0 bytes touches nothing (a 0-byte output range
    /// may name the constants pool, with a start past the other pools).
    fn copy_bytes(&mut self, s: &MemRange, so: usize, d: &MemRange, dof: usize, n: usize) {
        if n == 0 {
            return;
        }
        let (src, dst) = (s.start as usize + so, d.start as usize + dof);
        match (s.pool, d.pool) {
            (Pool::Main, Pool::Main) => self.main.copy_within(src..src + n, dst),
            (Pool::Kpu, Pool::Kpu) => self.kpu.copy_within(src..src + n, dst),
            (from, Pool::Kpu) => {
                let from = if from == Pool::Main { &*self.main } else { self.consts };
                self.kpu[dst..dst + n].copy_from_slice(&from[src..src + n])
            }
            (from, _) => {
                let from = if from == Pool::Kpu { &*self.kpu } else { self.consts };
                self.main[dst..dst + n].copy_from_slice(&from[src..src + n])
            }
        }
    }
}

#[inline]
fn off(s: &Shape, i: [usize; 4]) -> usize {
    ((i[0] * s[1] as usize + i[1]) * s[2] as usize + i[2]) * s[3] as usize + i[3]
}

#[inline]
fn reduced(i: [usize; 4], s: &Shape) -> [usize; 4] {
    core::array::from_fn(|d| if i[d] >= s[d] as usize { 0 } else { i[d] })
}

/// `std::min` / `std::max` as nncase uses them (NaN handling included).
#[inline]
fn min_f(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}
#[inline]
fn max_f(a: f32, b: f32) -> f32 {
    if a < b { b } else { a }
}

/// `carry_shift<int64_t, false>` (beta4, fixed): round half toward +∞.
#[inline]
pub fn carry_shift_up(v: i64, s: u8) -> i64 {
    if s == 0 { v } else { v.wrapping_add(1i64 << (s - 1)) >> s }
}

/// `mul_and_carry_shift`: `(int32)carry_shift((int64)v * mul, shift)`.
#[inline]
pub fn mul_and_carry_shift(v: i32, mul: i32, s: u8) -> i32 {
    carry_shift_up((v as i64).wrapping_mul(mul as i64), s) as i32
}

fn binary_f(op: u32, a: f32, b: f32) -> f32 {
    match op {
        0 => a + b,
        1 => a - b,
        2 => a * b,
        3 => a / b,
        4 => min_f(a, b),
        _ => max_f(a, b),
    }
}

fn binary_q(op: u32, a: i32, b: i32) -> i32 {
    match op {
        0 => a.wrapping_add(b),
        1 => a.wrapping_sub(b),
        2 => a.wrapping_mul(b),
        3 => {
            // (a + b / 2) / b, C truncating division; division by zero yields 0 here.
            a.wrapping_add(b / 2).checked_div(b).unwrap_or(0)
        }
        4 => a.min(b),
        _ => a.max(b),
    }
}

fn unary_f(op: u32, x: f32) -> f32 {
    match op {
        0 => libm::fabsf(x),
        1 => libm::ceilf(x),
        2 => libm::cosf(x),
        3 => libm::expf(x),
        4 => libm::floorf(x),
        5 => libm::logf(x),
        6 => -x,
        7 => 1.0 / libm::sqrtf(x),
        8 => libm::sinf(x),
        _ => x * x,
    }
}

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
fn window_at(win: &Window, y: usize, x: usize, h: u32, w: u32) -> [(i64, i64, i64); 2] {
    [
        axis(y, h, win.stride.0, win.pad_h.before, win.filter.0, win.dilation.0),
        axis(x, w, win.stride.1, win.pad_w.before, win.filter.1, win.dilation.1),
    ]
}

/// Runs one node. Ranges and counts were checked when the model was parsed.
pub(crate) fn run_node(
    n: &Node<'_>,
    m: &mut Mem<'_>,
    scratch: &mut [u8],
    rounding: ActivationRounding,
) -> Result<(), KmodelError> {
    match *n {
        Node::Binary { a, b, output, op, a_shape, b_shape, out_shape, act } => {
            if a_shape == b_shape {
                for i in 0..numel(&a_shape) as usize {
                    let v = act.apply(binary_f(op, m.f(&a, i), m.f(&b, i)));
                    m.set_f(&output, i, v);
                }
            } else {
                each4(&out_shape, |i| {
                    let av = m.f(&a, off(&a_shape, reduced(i, &a_shape)));
                    let bv = m.f(&b, off(&b_shape, reduced(i, &b_shape)));
                    m.set_f(&output, off(&out_shape, i), act.apply(binary_f(op, av, bv)));
                });
            }
        }
        Node::QuantizedBinary { a, b, output, op, a_shape, b_shape, out_shape, qa, qb, qo } => {
            let q = |av: u8, bv: u8| -> u8 {
                let x = mul_and_carry_shift((av as i32).wrapping_add(qa.offset), qa.mul, qa.shift);
                let y = mul_and_carry_shift((bv as i32).wrapping_add(qb.offset), qb.mul, qb.shift);
                let o = mul_and_carry_shift(binary_q(op, x, y), qo.mul, qo.shift);
                o.wrapping_add(qo.offset).clamp(0, 255) as u8
            };
            if a_shape == b_shape {
                for i in 0..numel(&a_shape) as usize {
                    let v = q(m.u(&a, i), m.u(&b, i));
                    m.set_u(&output, i, v);
                }
            } else {
                each4(&out_shape, |i| {
                    let av = m.u(&a, off(&a_shape, reduced(i, &a_shape)));
                    let bv = m.u(&b, off(&b_shape, reduced(i, &b_shape)));
                    m.set_u(&output, off(&out_shape, i), q(av, bv));
                });
            }
        }
        Node::Concat { output, inner, outer, inputs, dims } => {
            let mut o = 0usize;
            for oc in 0..outer as usize {
                for part in concat_parts(inputs, dims) {
                    let (ir, dim) = part?;
                    let size = inner as usize * dim as usize;
                    m.copy_bytes(&ir, oc * size, &output, o, size);
                    o += size;
                }
            }
        }
        Node::Conv2d { input, output, in_shape, groups, out_channels, win, act, weights, bias } => {
            let layout = Layout::Nchw { groups };
            Conv { layout, input, output, shape: in_shape, out_channels, win, weights, bias }.f32(m, act);
        }
        Node::QuantizedConv2d {
            input,
            output,
            in_shape,
            groups,
            out_channels,
            win,
            input_offset,
            filter_offset,
            qo,
            bias,
            weights,
        } => {
            let layout = Layout::Nchw { groups };
            let conv = Conv { layout, input, output, shape: in_shape, out_channels, win, weights, bias };
            conv.u8(m, input_offset, filter_offset, qo);
        }
        Node::Conv2dTranspose { input, output, in_shape, out_shape, groups, win, act, weights, bias: _ } => {
            // nn02's kernel computes `bias[…]` into a variable it never uses: no bias is added.
            let total = numel(&out_shape) as usize;
            for i in 0..total {
                m.set_f(&output, i, 0.0);
            }
            let (g_ic, g_oc) = ((in_shape[1] / groups) as usize, (out_shape[1] / groups) as usize);
            let (fh, fw) = (win.filter.0 as usize, win.filter.1 as usize);
            let (oh, ow) = (out_shape[2], out_shape[3]);
            let mut in_idx = 0usize;
            for batch in 0..in_shape[0] as usize {
                for g in 0..groups as usize {
                    for ic in 0..g_ic {
                        for iy in 0..in_shape[2] as usize {
                            for ix in 0..in_shape[3] as usize {
                                let [(oy0, ky0, ky1), (ox0, kx0, kx1)] = window_at(&win, iy, ix, oh, ow);
                                let in_v = m.f(&input, in_idx);
                                in_idx += 1;
                                for oc in 0..g_oc {
                                    let w_base = ((g * g_oc + oc) * g_ic + ic) * fh * fw;
                                    let out_c =
                                        (batch * out_shape[1] as usize + g * g_oc + oc) * oh as usize * ow as usize;
                                    for ky in ky0..ky1 {
                                        for kx in kx0..kx1 {
                                            let oy = oy0 + win.dilation.0 as i64 * ky;
                                            let ox = ox0 + win.dilation.1 as i64 * kx;
                                            let w = f32_at(weights, 4 * (w_base + ky as usize * fw + kx as usize));
                                            let o = out_c + (oy * ow as i64 + ox) as usize;
                                            let v = m.f(&output, o) + in_v * w;
                                            m.set_f(&output, o, v);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            for i in 0..total {
                let v = act.apply(m.f(&output, i));
                m.set_f(&output, i, v);
            }
        }
        Node::Dequantize { input, output, zero_point, scale } => {
            // Simulator expression (docs/kmodel.md §10-11): (q - zp) * (1 / scale).
            let div = 1.0f32 / scale;
            for i in 0..input.size as usize {
                let v = (m.u(&input, i) as i32).wrapping_sub(zero_point) as f32 * div;
                m.set_f(&output, i, v);
            }
        }
        Node::Quantize { input, output, zero_point, scale } => {
            for i in 0..input.size as usize / 4 {
                let v = libm::roundf(m.f(&input, i) * scale + zero_point as f32) as i32;
                m.set_u(&output, i, v.clamp(0, 255) as u8);
            }
        }
        Node::MatMul { a, b, output, a_rows, a_cols, b_cols, act, bias } => {
            let (ac, bc) = (a_cols as usize, b_cols as usize);
            for oy in 0..a_rows as usize {
                for ox in 0..bc {
                    let mut v = f32_at(bias, 4 * ox);
                    for i in 0..ac {
                        v += m.f(&a, oy * ac + i) * m.f(&b, i * bc + ox);
                    }
                    m.set_f(&output, oy * bc + ox, act.apply(v));
                }
            }
        }
        Node::QuantizedMatMul { a, b, output, a_rows, a_cols, b_cols, a_offset, b_offset, qo, bias } => {
            let (ac, bc) = (a_cols as usize, b_cols as usize);
            for oy in 0..a_rows as usize {
                for ox in 0..bc {
                    let mut v = u32_at(bias, 4 * ox) as i32;
                    for i in 0..ac {
                        let x = (m.u(&a, oy * ac + i) as i32).wrapping_add(a_offset);
                        let y = (m.u(&b, i * bc + ox) as i32).wrapping_add(b_offset);
                        v = v.wrapping_add(x.wrapping_mul(y));
                    }
                    let o = mul_and_carry_shift(v, qo.mul, qo.shift).wrapping_add(qo.offset);
                    m.set_u(&output, oy * bc + ox, o.clamp(0, 255) as u8);
                }
            }
        }
        Node::MemoryCopy { input, output } => {
            let n = (input.size as usize / 4) * 4;
            m.copy_bytes(&input, 0, &output, 0, n);
        }
        Node::Pad { input, output, in_shape, paddings, value } => {
            let e = input.dtype.bytes();
            let out_shape: [i64; 4] =
                core::array::from_fn(|d| in_shape[d] as i64 + paddings[d].before as i64 + paddings[d].after as i64);
            let inside = |d: usize, v: i64, p: &Padding| v >= p.before as i64 && v < out_shape[d] - p.after as i64;
            let mut o = 0usize;
            for d0 in 0..out_shape[0] {
                for d1 in 0..out_shape[1] {
                    for d2 in 0..out_shape[2] {
                        for d3 in 0..out_shape[3] {
                            let idx = [d0, d1, d2, d3];
                            if (0..4).all(|d| inside(d, idx[d], &paddings[d])) {
                                let src: [usize; 4] =
                                    core::array::from_fn(|d| (idx[d] - paddings[d].before as i64) as usize);
                                m.copy_elem(&input, off(&in_shape, src), &output, o, e);
                            } else {
                                let ob = output.start as usize + o * e;
                                m.buf_mut(output.pool)[ob..ob + e].copy_from_slice(&value[..e]);
                            }
                            o += 1;
                        }
                    }
                }
            }
        }
        Node::Reduce { input, output, op, in_shape, out_shape, init } => {
            for i in 0..numel(&out_shape) as usize {
                m.set_f(&output, i, init);
            }
            each4(&in_shape, |i| {
                let a = m.f(&input, off(&in_shape, i));
                let o = off(&out_shape, reduced(i, &out_shape));
                let b = m.f(&output, o);
                let v = match op {
                    0 | 3 => b + a,
                    1 => min_f(b, a),
                    _ => max_f(b, a),
                };
                m.set_f(&output, o, v);
            });
            if op == 0 {
                let mul = (output.size / 4) as f32 / (input.size / 4) as f32;
                for i in 0..output.size as usize / 4 {
                    let v = m.f(&output, i) * mul;
                    m.set_f(&output, i, v);
                }
            }
        }
        Node::ReduceWindow2d { input, output, op, in_shape, win, init, act, nhwc } => {
            reduce_window2d(m, &input, &output, op, &in_shape, &win, init, act, nhwc);
        }
        Node::ResizeImage { input, output, in_shape, out_h, out_w, bilinear, align_corners } => {
            resize(m, &input, &output, &in_shape, out_h, out_w, bilinear, align_corners);
        }
        Node::Softmax { input, output, inner, outer, beta } => {
            let inner = inner as usize;
            for b in 0..outer as usize {
                let base = b * inner;
                let mut max = m.f(&input, base);
                for i in 1..inner {
                    let v = m.f(&input, base + i);
                    if max < v {
                        max = v;
                    }
                }
                let mut sum = 0f32;
                for i in 0..inner {
                    let e = libm::expf((m.f(&input, base + i) - max) * beta);
                    sum += e;
                    m.set_f(&output, base + i, e);
                }
                for i in 0..inner {
                    let v = m.f(&output, base + i) / sum;
                    m.set_f(&output, base + i, v);
                }
            }
        }
        Node::Transpose { input, output, in_shape, perm } => {
            let e = input.dtype.bytes();
            let out_shape: Shape = core::array::from_fn(|d| in_shape[perm[d] as usize]);
            each4(&out_shape, |o| {
                let mut i = [0usize; 4];
                for d in 0..4 {
                    i[perm[d] as usize] = o[d];
                }
                m.copy_elem(&input, off(&in_shape, i), &output, off(&out_shape, o), e);
            });
        }
        Node::StridedSlice { input, output, in_shape, begin, end, strides } => {
            // Element k of axis d is begin + k · stride for k < slice_len (the parser checked the
            // first and last inside the shape); computed in i64, never one stride past the end.
            let e = input.dtype.bytes();
            let len: Shape = core::array::from_fn(|d| slice_len(begin[d], end[d], strides[d]).unwrap_or(0) as u32);
            each4(&len, |k| {
                let i = core::array::from_fn(|d| (begin[d] as i64 + k[d] as i64 * strides[d] as i64) as usize);
                m.copy_elem(&input, off(&in_shape, i), &output, off(&len, k), e);
            });
        }
        Node::Unary { input, output, op } => {
            for i in 0..input.size as usize / 4 {
                let v = unary_f(op, m.f(&input, i));
                m.set_f(&output, i, v);
            }
        }
        Node::NnilUnary { input, output, program } => {
            for i in 0..input.size as usize / 4 {
                let v = eval_nnil(program, m.f(&input, i));
                m.set_f(&output, i, v);
            }
        }
        Node::TableLookup1d { input, table, output } => {
            for i in 0..input.size as usize {
                let v = m.u(&table, m.u(&input, i) as usize);
                m.set_u(&output, i, v);
            }
        }
        Node::CpuConv2d { input, output, in_shape, out_channels, depthwise, win, act, weights, bias } => {
            let layout = Layout::Nhwc { depthwise };
            Conv { layout, input, output, shape: in_shape, out_channels, win, weights, bias }.f32(m, act);
        }
        Node::CpuQuantizedConv2d {
            input,
            output,
            in_shape,
            out_channels,
            depthwise,
            win,
            input_offset,
            filter_offset,
            qo,
            weights,
            bias,
        } => {
            let layout = Layout::Nhwc { depthwise };
            let conv = Conv { layout, input, output, shape: in_shape, out_channels, win, weights, bias };
            // cpu_kernels.h subtracts the offsets (the neutral kernels add them).
            conv.u8(m, input_offset.wrapping_neg(), filter_offset.wrapping_neg(), qo);
        }
        Node::KpuUpload { input, output, in_shape } => {
            let n = numel(&in_shape) as usize;
            let src_start = input.start as usize;
            let (src, kpu): (&[u8], &mut [u8]) = match input.pool {
                Pool::Kpu => {
                    // Never produced by nncase; stage through scratch to keep borrows apart.
                    let s = scratch.get_mut(..n).ok_or(KmodelError::MemoryTooSmall {
                        pool: Pool::Scratch,
                        needed: n as u64,
                        got: 0,
                    })?;
                    s.copy_from_slice(&m.kpu[src_start..src_start + n]);
                    (s, m.kpu)
                }
                Pool::Main => (&m.main[src_start..src_start + n], m.kpu),
                _ => (&m.consts[src_start..src_start + n], m.kpu),
            };
            kpu::upload(src, kpu, output.start as usize, in_shape[0], in_shape[1], in_shape[2], in_shape[3]);
        }
        Node::KpuConv2d { main_out, batches, conv } => {
            let l = conv.layer;
            let per = l.out_compact_bytes() as usize;
            for b in 0..batches as usize {
                let src = l.src_row as usize * 64 + b * l.in_map_bytes() as usize;
                let dst = l.dst_row as usize * 64 + b * l.out_map_bytes() as usize;
                let out = match main_out {
                    Some(r) => {
                        let s = r.start as usize + b * per;
                        Some(&mut m.main[s..s + per])
                    }
                    None => None,
                };
                kpu::conv(&conv, m.kpu, src, dst, scratch, out, rounding)?;
            }
        }
    }
    Ok(())
}

fn each4(s: &Shape, mut f: impl FnMut([usize; 4])) {
    for d0 in 0..s[0] as usize {
        for d1 in 0..s[1] as usize {
            for d2 in 0..s[2] as usize {
                for d3 in 0..s[3] as usize {
                    f([d0, d1, d2, d3]);
                }
            }
        }
    }
}

/// How a convolution lays out its input, output and weights.
#[derive(Clone, Copy)]
enum Layout {
    /// NCHW, grouped (the neutral kernels).
    Nchw { groups: u32 },
    /// NHWC, dense or depthwise (the CPU kernels).
    Nhwc { depthwise: bool },
}

/// A convolution node: geometry, ranges and parameters.
struct Conv<'a> {
    layout: Layout,
    input: MemRange,
    output: MemRange,
    shape: Shape,
    out_channels: u32,
    win: Window,
    weights: &'a [u8],
    bias: &'a [u8],
}

impl Conv<'_> {
    /// The f32 convolution, clamped by `act`.
    fn f32(&self, m: &mut Mem<'_>, act: Clamp) {
        let (input, output, weights, bias) = (self.input, self.output, self.weights, self.bias);
        self.each(
            m,
            |m, v, w_idx, idx| v + m.f(&input, idx) * f32_at(weights, 4 * w_idx),
            |oc| f32_at(bias, 4 * oc),
            |m, o, v| m.set_f(&output, o, act.apply(v)),
        );
    }

    /// The u8 convolution: offsets added to inputs and weights, i32 bias and accumulator, then
    /// requantised by `qo`.
    fn u8(&self, m: &mut Mem<'_>, input_offset: i32, filter_offset: i32, qo: Requant) {
        let (input, output, weights, bias) = (self.input, self.output, self.weights, self.bias);
        self.each(
            m,
            |m, v: i32, w_idx, idx| {
                let x = (m.u(&input, idx) as i32).wrapping_add(input_offset);
                let wv = (weights[w_idx] as i32).wrapping_add(filter_offset);
                v.wrapping_add(x.wrapping_mul(wv))
            },
            |oc| u32_at(bias, 4 * oc) as i32,
            |m, o, v| {
                let r = mul_and_carry_shift(v, qo.mul, qo.shift).wrapping_add(qo.offset);
                m.set_u(&output, o, r.clamp(0, 255) as u8);
            },
        );
    }

    /// Every output element in order: `acc(m, v, w_idx, in_idx)` folds one tap into the
    /// accumulator that `bias(oc)` starts, `store(m, out_idx, v)` writes the result.
    fn each<A: Copy>(
        &self,
        m: &mut Mem<'_>,
        acc: impl Fn(&Mem<'_>, A, usize, usize) -> A,
        bias: impl Fn(usize) -> A,
        store: impl FnMut(&mut Mem<'_>, usize, A),
    ) {
        match self.layout {
            Layout::Nchw { groups } => self.nchw(groups, m, acc, bias, store),
            Layout::Nhwc { depthwise } => self.nhwc(depthwise, m, acc, bias, store),
        }
    }

    /// NCHW grouped convolution; per output element the taps by input channel, ky, kx.
    fn nchw<A: Copy>(
        &self,
        groups: u32,
        m: &mut Mem<'_>,
        acc: impl Fn(&Mem<'_>, A, usize, usize) -> A,
        bias: impl Fn(usize) -> A,
        mut store: impl FnMut(&mut Mem<'_>, usize, A),
    ) {
        let (s, win) = (&self.shape, &self.win);
        let (oh, ow) = win.out_hw(s[2], s[3]);
        let (g_ic, g_oc) = ((s[1] / groups) as usize, (self.out_channels / groups) as usize);
        let (fh, fw) = (win.filter.0 as usize, win.filter.1 as usize);
        let (h, w) = (s[2], s[3]);
        let mut o = 0usize;
        for batch in 0..s[0] as usize {
            for g in 0..groups as usize {
                for oc in 0..g_oc {
                    for oy in 0..oh.max(0) as usize {
                        for ox in 0..ow.max(0) as usize {
                            let [(y0, ky0, ky1), (x0, kx0, kx1)] = window_at(win, oy, ox, h, w);
                            let mut v = bias(g * g_oc + oc);
                            for ic in 0..g_ic {
                                let in_c = (batch * s[1] as usize + g * g_ic + ic) * h as usize * w as usize;
                                let w_ic = ((g * g_oc + oc) * g_ic + ic) * fh * fw;
                                for ky in ky0..ky1 {
                                    for kx in kx0..kx1 {
                                        let iy = y0 + win.dilation.0 as i64 * ky;
                                        let ix = x0 + win.dilation.1 as i64 * kx;
                                        let i = in_c + (iy * w as i64 + ix) as usize;
                                        v = acc(m, v, w_ic + ky as usize * fw + kx as usize, i);
                                    }
                                }
                            }
                            store(m, o, v);
                            o += 1;
                        }
                    }
                }
            }
        }
    }

    /// NHWC convolution, dense or depthwise (output channel c reads input channel c); per
    /// output element the taps by ky, kx, input channel.
    fn nhwc<A: Copy>(
        &self,
        depthwise: bool,
        m: &mut Mem<'_>,
        acc: impl Fn(&Mem<'_>, A, usize, usize) -> A,
        bias: impl Fn(usize) -> A,
        mut store: impl FnMut(&mut Mem<'_>, usize, A),
    ) {
        let (s, win) = (&self.shape, &self.win);
        let (oh, ow) = win.out_hw(s[1], s[2]);
        let (h, w, c) = (s[1], s[2], s[3] as usize);
        let (k2, fw) = (win.filter.0 as usize * win.filter.1 as usize, win.filter.1 as usize);
        let (n_oc, n_ic) = if depthwise { (c, 1) } else { (self.out_channels as usize, c) };
        let mut o = 0usize;
        for batch in 0..s[0] as usize {
            let in_b = batch * h as usize * w as usize * c;
            for oy in 0..oh.max(0) as usize {
                for ox in 0..ow.max(0) as usize {
                    let [(y0, ky0, ky1), (x0, kx0, kx1)] = window_at(win, oy, ox, h, w);
                    for oc in 0..n_oc {
                        let first = if depthwise { oc } else { 0 };
                        let mut v = bias(oc);
                        for ky in ky0..ky1 {
                            for kx in kx0..kx1 {
                                let iy = y0 + win.dilation.0 as i64 * ky;
                                let ix = x0 + win.dilation.1 as i64 * kx;
                                let pix = in_b + (iy * w as i64 + ix) as usize * c + first;
                                let w_k = (oc * k2 + ky as usize * fw + kx as usize) * n_ic;
                                for ic in 0..n_ic {
                                    v = acc(m, v, w_k + ic, pix + ic);
                                }
                            }
                        }
                        store(m, o, v);
                        o += 1;
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn reduce_window2d(
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

#[allow(clippy::too_many_arguments)]
fn resize(
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

/// nnil opcodes that carry no immediate.
fn nnil_arity(op: u8) -> Option<(i32, i32)> {
    // (pops, pushes)
    Some(match op {
        0x00 => (0, 0),
        0x01 => (1, 2),
        0x02 => (1, 0),
        0x03..=0x05 => (0, 1),
        0x20..=0x29 => (1, 1),
        0x40..=0x45 => (2, 1),
        0x80 => (3, 1),
        0xA0 => (1, 0),
        _ => return None,
    })
}

/// Checks an nnil program: known opcodes, complete immediates, no stack underflow or overflow
/// (the evaluation stack holds 64 values), and a `ret` on every path (the program is
/// straight-line).
pub(crate) fn check_nnil(p: &[u8]) -> Result<(), &'static str> {
    let mut depth = 0i32;
    let mut i = 0usize;
    while i < p.len() {
        let op = p[i];
        i += 1;
        if op == 0x06 {
            if i + 4 > p.len() {
                return Err("nnil ldc_r4 immediate runs past the body");
            }
            i += 4;
            depth += 1;
        } else {
            let (pops, pushes) = nnil_arity(op).ok_or("unknown nnil opcode")?;
            if depth < pops {
                return Err("nnil program pops an empty stack");
            }
            depth += pushes - pops;
            if op == 0xA0 {
                return Ok(());
            }
        }
        if depth > 64 {
            return Err("nnil program overflows its 64-value stack");
        }
    }
    Err("nnil program has no ret")
}

/// Evaluates a checked nnil program for one input value.
fn eval_nnil(p: &[u8], x: f32) -> f32 {
    let mut st = [0f32; 65];
    let mut top = 0usize;
    let mut i = 0usize;
    macro_rules! pop {
        () => {{
            top -= 1;
            st[top]
        }};
    }
    while i < p.len() {
        let op = p[i];
        i += 1;
        match op {
            0x00 => {}
            0x01 => {
                st[top] = st[top - 1];
                top += 1;
            }
            0x02 => top -= 1,
            0x03..=0x06 => {
                st[top] = match op {
                    0x03 => x,
                    0x04 => 0.0,
                    0x05 => 1.0,
                    _ => {
                        let v = f32_at(p, i);
                        i += 4;
                        v
                    }
                };
                top += 1;
            }
            0x20..=0x29 => {
                let v = pop!();
                st[top] = unary_f((op - 0x20) as u32, v);
                top += 1;
            }
            0x40..=0x45 => {
                let b = pop!();
                let a = pop!();
                st[top] = binary_f((op - 0x40) as u32, a, b);
                top += 1;
            }
            0x80 => {
                let high = pop!();
                let low = pop!();
                let v = pop!();
                // std::clamp(v, low, high)
                st[top] = if v < low {
                    low
                } else if high < v {
                    high
                } else {
                    v
                };
                top += 1;
            }
            _ => return pop!(),
        }
    }
    0.0
}
