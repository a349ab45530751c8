//! The convolutions of the neutral (NCHW, grouped) and CPU (NHWC, dense or depthwise)
//! kernels, f32 and quantised, and the f32 transposed convolution. Taps outside the input are
//! skipped; accumulation order follows nncase's loops.

use crate::decode::v4::{Clamp, MemRange, Node, Requant, Shape, Window, numel};
use crate::reader::{f32_at, u32_at};

use super::mem::Mem;
use super::quant::mul_and_carry_shift;
use super::window::window_at;

/// Runs `n` if it is one of the convolutions.
pub(super) fn run(n: &Node<'_>, m: &mut Mem<'_>) {
    match *n {
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
            conv2d_transpose(m, (&input, &output), (&in_shape, &out_shape), groups, &win, act, weights)
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
            // The CPU kernels subtract the offsets (the neutral kernels add them).
            conv.u8(m, input_offset.wrapping_neg(), filter_offset.wrapping_neg(), qo);
        }
        _ => {}
    }
}

/// f32 transposed convolution: every input element scatters `x · w` into the output windows it
/// reaches, then the clamp. nncase v0.2's kernel computes `bias[…]` into a variable it never
/// uses, so no bias is added.
fn conv2d_transpose(
    m: &mut Mem<'_>,
    (input, output): (&MemRange, &MemRange),
    (in_shape, out_shape): (&Shape, &Shape),
    groups: u32,
    win: &Window,
    act: Clamp,
    weights: &[u8],
) {
    let total = numel(out_shape) as usize;
    for i in 0..total {
        m.set_f(output, i, 0.0);
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
                        let [(oy0, ky0, ky1), (ox0, kx0, kx1)] = window_at(win, iy, ix, oh, ow);
                        let in_v = m.f(input, in_idx);
                        in_idx += 1;
                        for oc in 0..g_oc {
                            let w_base = ((g * g_oc + oc) * g_ic + ic) * fh * fw;
                            let out_c = (batch * out_shape[1] as usize + g * g_oc + oc) * oh as usize * ow as usize;
                            for ky in ky0..ky1 {
                                for kx in kx0..kx1 {
                                    let oy = oy0 + win.dilation.0 as i64 * ky;
                                    let ox = ox0 + win.dilation.1 as i64 * kx;
                                    let w = f32_at(weights, 4 * (w_base + ky as usize * fw + kx as usize));
                                    let o = out_c + (oy * ow as i64 + ox) as usize;
                                    let v = m.f(output, o) + in_v * w;
                                    m.set_f(output, o, v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for i in 0..total {
        let v = act.apply(m.f(output, i));
        m.set_f(output, i, v);
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
