//! The memory a V4 node reads and writes: the three pools a memory_range can name, and the
//! index helpers of nncase's NCHW kernels.

use crate::decode::v4::{MemRange, Shape};
use crate::error::Pool;

/// The three pools a node can touch.
pub(crate) struct Mem<'x> {
    /// The model's constants.
    pub consts: &'x [u8],
    /// Main memory.
    pub main: &'x mut [u8],
    /// KPU RAM as the CPU sees it.
    pub kpu: &'x mut [u8],
}

impl Mem<'_> {
    #[inline]
    pub(super) fn buf(&self, p: Pool) -> &[u8] {
        match p {
            Pool::Constants => self.consts,
            Pool::Main => self.main,
            _ => self.kpu,
        }
    }
    #[inline]
    pub(super) fn buf_mut(&mut self, p: Pool) -> &mut [u8] {
        match p {
            Pool::Kpu => self.kpu,
            // Output ranges in the constants pool are refused when the model is parsed.
            _ => self.main,
        }
    }
    #[inline]
    pub(super) fn f(&self, r: &MemRange, i: usize) -> f32 {
        let o = r.start as usize + 4 * i;
        let b = self.buf(r.pool);
        f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
    }
    #[inline]
    pub(super) fn set_f(&mut self, r: &MemRange, i: usize, v: f32) {
        let o = r.start as usize + 4 * i;
        self.buf_mut(r.pool)[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
    #[inline]
    pub(super) fn u(&self, r: &MemRange, i: usize) -> u8 {
        self.buf(r.pool)[r.start as usize + i]
    }
    #[inline]
    pub(super) fn set_u(&mut self, r: &MemRange, i: usize, v: u8) {
        let o = r.start as usize + i;
        self.buf_mut(r.pool)[o] = v;
    }
    /// Copies element `si` of `s` to element `di` of `d` (`e` bytes each).
    #[inline]
    pub(super) fn copy_elem(&mut self, s: &MemRange, si: usize, d: &MemRange, di: usize, e: usize) {
        let mut tmp = [0u8; 4];
        let so = s.start as usize + si * e;
        tmp[..e].copy_from_slice(&self.buf(s.pool)[so..so + e]);
        let o = d.start as usize + di * e;
        self.buf_mut(d.pool)[o..o + e].copy_from_slice(&tmp[..e]);
    }
    /// Copies `n` bytes from `s.start + so` to `d.start + dof`. The destination is the pool
    /// `d` names (as in [`Mem::buf_mut`]); copying 0 bytes touches nothing (a 0-byte output range
    /// may name the constants pool, with a start past the other pools).
    pub(super) fn copy_bytes(&mut self, s: &MemRange, so: usize, d: &MemRange, dof: usize, n: usize) {
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

/// Linear index of `i` in a tensor of shape `s`.
#[inline]
pub(super) fn off(s: &Shape, i: [usize; 4]) -> usize {
    ((i[0] * s[1] as usize + i[1]) * s[2] as usize + i[2]) * s[3] as usize + i[3]
}

/// Broadcasting: `i` with every axis at or past `s`'s size set to 0 (nncase's
/// `idx[d] >= shape[d] ? 0 : idx[d]`).
#[inline]
pub(super) fn reduced(i: [usize; 4], s: &Shape) -> [usize; 4] {
    core::array::from_fn(|d| if i[d] >= s[d] as usize { 0 } else { i[d] })
}

/// Calls `f` with every index of shape `s`, in NCHW order.
pub(super) fn each4(s: &Shape, mut f: impl FnMut([usize; 4])) {
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
