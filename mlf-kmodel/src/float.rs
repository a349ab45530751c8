//! The f32 scalar operations of nncase v0.2's neutral kernels, in IEEE f32 without fused
//! multiply-add, with libm for the transcendental functions (as the simulator evaluates them on
//! the host).

/// `std::min(a, b)` as nncase uses it: `b < a ? b : a` (a NaN `b` yields `a`).
#[inline]
pub fn min_f(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}

/// `std::max(a, b)`: `a < b ? b : a`.
#[inline]
pub fn max_f(a: f32, b: f32) -> f32 {
    if a < b { b } else { a }
}

/// `binary_op`: 0 add, 1 sub, 2 mul, 3 div, 4 min, 5 max.
pub fn binary_f(op: u32, a: f32, b: f32) -> f32 {
    match op {
        0 => a + b,
        1 => a - b,
        2 => a * b,
        3 => a / b,
        4 => min_f(a, b),
        _ => max_f(a, b),
    }
}

/// `unary_op`: 0 abs, 1 ceil, 2 cos, 3 exp, 4 floor, 5 log, 6 neg, 7 rsqrt (`1 / sqrtf`),
/// 8 sin, 9 square.
pub fn unary_f(op: u32, x: f32) -> f32 {
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
