//! A correctly rounded `expf` for programs that must reproduce a reference bit for bit.
//!
//! On these targets the model's C takes `expf` from Rust's `compiler_builtins` (a port of
//! musl's, within 1 ulp); the reference vectors were computed with glibc's, which is correctly
//! rounded in nearly all cases, so some outputs differ by 1 ulp. Rounding the double-precision
//! `exp` (error below 1 ulp of a double) to single precision gives the correctly rounded
//! result except in double-rounding corner cases. It costs a soft-float double `exp` per call
//! on a single-precision FPU.

unsafe extern "C" {
    /// Double-precision `exp` from `compiler_builtins`.
    safe fn exp(x: f64) -> f64;
}

/// `e^x` correctly rounded to single precision (see the module documentation).
pub fn expf_correctly_rounded(x: f32) -> f32 {
    exp(f64::from(x)) as f32
}
