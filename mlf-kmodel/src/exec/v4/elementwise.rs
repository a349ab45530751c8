//! Element-wise nodes, reductions and matrix products (nncase v0.2.0-beta4
//! `src/common/include/kernels/neutral/neutral_kernels.h`).

use crate::decode::v4::{Clamp, MemRange, Node, Requant, Shape, numel};
use crate::float::{binary_f, max_f, min_f, unary_f};
use crate::nnil;
use crate::reader::{f32_at, u32_at};

use super::mem::{Mem, each4, off, reduced};
use super::quant::{binary_q, mul_and_carry_shift};

/// Runs `n` if it is one of this module's nodes.
pub(super) fn run(n: &Node<'_>, m: &mut Mem<'_>) {
    match *n {
        Node::Binary { a, b, output, op, a_shape, b_shape, out_shape, act } => {
            let f = |x: f32, y: f32| act.apply(binary_f(op, x, y));
            broadcast(
                m,
                [&a, &b, &output],
                [&a_shape, &b_shape, &out_shape],
                |m, r, i| m.f(r, i),
                f,
                |m, r, i, v| m.set_f(r, i, v),
            );
        }
        Node::QuantizedBinary { a, b, output, op, a_shape, b_shape, out_shape, qa, qb, qo } => {
            let f = |x: u8, y: u8| quantized_binary(op, x, y, [&qa, &qb, &qo]);
            broadcast(
                m,
                [&a, &b, &output],
                [&a_shape, &b_shape, &out_shape],
                |m, r, i| m.u(r, i),
                f,
                |m, r, i, v| m.set_u(r, i, v),
            );
        }
        Node::Dequantize { input, output, zero_point, scale } => {
            // The simulator's expression: (q - zp) * (1 / scale).
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
        Node::Unary { input, output, op } => map_f(m, &input, &output, |x| unary_f(op, x)),
        Node::NnilUnary { input, output, program } => map_f(m, &input, &output, |x| nnil::eval(program, x)),
        Node::TableLookup1d { input, table, output } => {
            for i in 0..input.size as usize {
                let v = m.u(&table, m.u(&input, i) as usize);
                m.set_u(&output, i, v);
            }
        }
        Node::Softmax { input, output, inner, outer, beta } => softmax(m, &input, &output, (inner, outer), beta),
        Node::Reduce { input, output, op, in_shape, out_shape, init } => {
            reduce(m, &input, &output, op, (&in_shape, &out_shape), init)
        }
        Node::MatMul { a, b, output, a_rows, a_cols, b_cols, act, bias } => {
            matmul(m, [&a, &b, &output], (a_rows, a_cols, b_cols), act, bias)
        }
        Node::QuantizedMatMul { a, b, output, a_rows, a_cols, b_cols, a_offset, b_offset, qo, bias } => {
            quantized_matmul(m, [&a, &b, &output], (a_rows, a_cols, b_cols), (a_offset, b_offset), &qo, bias)
        }
        _ => {}
    }
}

/// `out = f(a, b)` element by element; shapes that differ broadcast (an axis of `a` or `b` at
/// or past its size reads index 0).
fn broadcast<T: Copy>(
    m: &mut Mem<'_>,
    [a, b, out]: [&MemRange; 3],
    [sa, sb, so]: [&Shape; 3],
    get: impl Fn(&Mem<'_>, &MemRange, usize) -> T,
    f: impl Fn(T, T) -> T,
    set: impl Fn(&mut Mem<'_>, &MemRange, usize, T),
) {
    if sa == sb {
        for i in 0..numel(sa) as usize {
            let v = f(get(m, a, i), get(m, b, i));
            set(m, out, i, v);
        }
    } else {
        each4(so, |i| {
            let av = get(m, a, off(sa, reduced(i, sa)));
            let bv = get(m, b, off(sb, reduced(i, sb)));
            set(m, out, off(so, i), f(av, bv));
        });
    }
}

/// Requantises both operands, applies the op in int32, requantises the result.
fn quantized_binary(op: u32, a: u8, b: u8, [qa, qb, qo]: [&Requant; 3]) -> u8 {
    let x = mul_and_carry_shift((a as i32).wrapping_add(qa.offset), qa.mul, qa.shift);
    let y = mul_and_carry_shift((b as i32).wrapping_add(qb.offset), qb.mul, qb.shift);
    let o = mul_and_carry_shift(binary_q(op, x, y), qo.mul, qo.shift);
    o.wrapping_add(qo.offset).clamp(0, 255) as u8
}

/// `out[i] = f(in[i])` over the `input.size / 4` floats of `input`.
fn map_f(m: &mut Mem<'_>, input: &MemRange, output: &MemRange, f: impl Fn(f32) -> f32) {
    for i in 0..input.size as usize / 4 {
        let v = f(m.f(input, i));
        m.set_f(output, i, v);
    }
}

/// Per row of `inner` values: max, `e = expf((x − max) · beta)`, sum in order, divide.
fn softmax(m: &mut Mem<'_>, input: &MemRange, output: &MemRange, (inner, outer): (u32, u32), beta: f32) {
    let inner = inner as usize;
    for b in 0..outer as usize {
        let base = b * inner;
        let mut max = m.f(input, base);
        for i in 1..inner {
            let v = m.f(input, base + i);
            if max < v {
                max = v;
            }
        }
        let mut sum = 0f32;
        for i in 0..inner {
            let e = libm::expf((m.f(input, base + i) - max) * beta);
            sum += e;
            m.set_f(output, base + i, e);
        }
        for i in 0..inner {
            let v = m.f(output, base + i) / sum;
            m.set_f(output, base + i, v);
        }
    }
}

/// Fills with `init` and folds the input in NCHW order (0 mean, 1 min, 2 max, 3 sum); a mean
/// is the sum times `out_count / in_count`.
fn reduce(m: &mut Mem<'_>, input: &MemRange, output: &MemRange, op: u32, (si, so): (&Shape, &Shape), init: f32) {
    for i in 0..numel(so) as usize {
        m.set_f(output, i, init);
    }
    each4(si, |i| {
        let a = m.f(input, off(si, i));
        let o = off(so, reduced(i, so));
        let b = m.f(output, o);
        let v = match op {
            0 | 3 => b + a,
            1 => min_f(b, a),
            _ => max_f(b, a),
        };
        m.set_f(output, o, v);
    });
    if op == 0 {
        let mul = (output.size / 4) as f32 / (input.size / 4) as f32;
        for i in 0..output.size as usize / 4 {
            let v = m.f(output, i) * mul;
            m.set_f(output, i, v);
        }
    }
}

/// f32 `[rows][cols] × [cols][b_cols]` plus bias, clamped.
fn matmul(m: &mut Mem<'_>, [a, b, out]: [&MemRange; 3], (rows, ac, bc): (u32, u32, u32), act: Clamp, bias: &[u8]) {
    let (ac, bc) = (ac as usize, bc as usize);
    for oy in 0..rows as usize {
        for ox in 0..bc {
            let mut v = f32_at(bias, 4 * ox);
            for i in 0..ac {
                v += m.f(a, oy * ac + i) * m.f(b, i * bc + ox);
            }
            m.set_f(out, oy * bc + ox, act.apply(v));
        }
    }
}

/// u8 matrix product: offsets added, i32 bias and accumulator, requantised by `qo`.
fn quantized_matmul(
    m: &mut Mem<'_>,
    [a, b, out]: [&MemRange; 3],
    (rows, ac, bc): (u32, u32, u32),
    (a_offset, b_offset): (i32, i32),
    qo: &Requant,
    bias: &[u8],
) {
    let (ac, bc) = (ac as usize, bc as usize);
    for oy in 0..rows as usize {
        for ox in 0..bc {
            let mut v = u32_at(bias, 4 * ox) as i32;
            for i in 0..ac {
                let x = (m.u(a, oy * ac + i) as i32).wrapping_add(a_offset);
                let y = (m.u(b, i * bc + ox) as i32).wrapping_add(b_offset);
                v = v.wrapping_add(x.wrapping_mul(y));
            }
            let o = mul_and_carry_shift(v, qo.mul, qo.shift).wrapping_add(qo.offset);
            m.set_u(out, oy * bc + ox, o.clamp(0, 255) as u8);
        }
    }
}
