//! The integer rounding of nncase v0.2.0-beta4's quantised kernels
//! (`src/common/include/runtime/runtime_op_utility.h`).

/// `carry_shift<int64_t, false>` as fixed two days before beta4 (`1 << (s − 1)` computed in
/// 64 bits): round half toward +∞.
#[inline]
pub fn carry_shift_up(v: i64, s: u8) -> i64 {
    if s == 0 { v } else { v.wrapping_add(1i64 << (s - 1)) >> s }
}

/// `mul_and_carry_shift`: `(int32)carry_shift((int64)v * mul, shift)`.
#[inline]
pub fn mul_and_carry_shift(v: i32, mul: i32, s: u8) -> i32 {
    carry_shift_up((v as i64).wrapping_mul(mul as i64), s) as i32
}

/// The `binary_op`s on requantised int32 operands (0 add, 1 sub, 2 mul, 3 div, 4 min, 5 max).
pub fn binary_q(op: u32, a: i32, b: i32) -> i32 {
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
