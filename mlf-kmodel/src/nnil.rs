//! nnil, the stack-machine programs of V4 `nnil_unary_method` nodes: a program maps one f32
//! to one f32.
//!
//! Opcodes (nncase v0.2.0-beta4 `src/common/include/runtime/nnil.h`): 0x00 nop, 0x01 dup,
//! 0x02 pop, 0x03 lda_0 (push the input), 0x04 ldc 0.0, 0x05 ldc 1.0, 0x06 ldc_r4 + a 4-byte
//! f32 immediate, 0x20..=0x29 the unary ops of [`crate::float::unary_f`] (abs … square),
//! 0x40..=0x45 the binary ops of [`crate::float::binary_f`] (b = pop, a = pop, push a op b),
//! 0x80 clamp (high = pop, low = pop, v = pop), 0xA0 ret (the output is the popped value).

use crate::float::{binary_f, unary_f};
use crate::reader::f32_at;

/// (pops, pushes) of the opcodes that carry no immediate.
fn arity(op: u8) -> Option<(i32, i32)> {
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
pub fn check(p: &[u8]) -> Result<(), &'static str> {
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
            let (pops, pushes) = arity(op).ok_or("unknown nnil opcode")?;
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
pub fn eval(p: &[u8], x: f32) -> f32 {
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
