//! Nodes that move bytes: concat, memory copy, pad, transpose, strided slice, and the upload
//! of a compact map into KPU RAM's layout.

use crate::decode::v4::{MemRange, Node, Padding, Shape, concat_parts, numel, slice_len};
use crate::error::{KmodelError, Pool};
use crate::kpu::upload;

use super::mem::{Mem, each4, off};

/// Runs `n` if it is one of this module's nodes; `scratch` stages a KPU-to-KPU upload.
pub(super) fn run(n: &Node<'_>, m: &mut Mem<'_>, scratch: &mut [u8]) -> Result<(), KmodelError> {
    match *n {
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
        Node::MemoryCopy { input, output } => {
            // nncase copies `size / 4` floats, whatever the datatype.
            let n = (input.size as usize / 4) * 4;
            m.copy_bytes(&input, 0, &output, 0, n);
        }
        Node::Pad { input, output, in_shape, paddings, value } => pad(m, &input, &output, &in_shape, &paddings, value),
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
        Node::KpuUpload { input, output, in_shape } => kpu_upload(m, &input, &output, &in_shape, scratch)?,
        _ => {}
    }
    Ok(())
}

/// Pads (or, with negative paddings, crops) each axis; padded elements take `value`.
fn pad(
    m: &mut Mem<'_>,
    input: &MemRange,
    output: &MemRange,
    in_shape: &Shape,
    paddings: &[Padding; 4],
    value: [u8; 4],
) {
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
                        let src: [usize; 4] = core::array::from_fn(|d| (idx[d] - paddings[d].before as i64) as usize);
                        m.copy_elem(input, off(in_shape, src), output, o, e);
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

/// Writes the compact N × C × H × W u8 map at `input` into KPU RAM at `output` with the KPU
/// layout (a source in KPU RAM itself, which nncase never writes, is staged through `scratch`).
fn kpu_upload(
    m: &mut Mem<'_>,
    input: &MemRange,
    output: &MemRange,
    s: &Shape,
    scratch: &mut [u8],
) -> Result<(), KmodelError> {
    let n = numel(s) as usize;
    let from = input.start as usize;
    let src: &[u8] = match input.pool {
        Pool::Kpu => {
            let len = scratch.len() as u64;
            let staged = scratch.get_mut(..n).ok_or(KmodelError::MemoryTooSmall {
                pool: Pool::Scratch,
                needed: n as u64,
                got: len,
            })?;
            staged.copy_from_slice(&m.kpu[from..from + n]);
            staged
        }
        Pool::Main => &m.main[from..from + n],
        _ => &m.consts[from..from + n],
    };
    upload(src, m.kpu, output.start as usize, s[0], s[1], s[2], s[3]);
    Ok(())
}
