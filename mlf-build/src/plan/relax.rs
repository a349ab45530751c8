//! The memory plan of a lowered Relax program: mlf's own liveness over the whole program, not
//! TVM's storage tokens. Every tensor that lives in a TVM storage block becomes a buffer of its
//! own; views keep the tensor they view alive; outputs live to the end. The buffers are packed
//! by [`pack::pack`], the packer graph models use. A kernel that takes scratch memory with
//! `TVMBackendAllocWorkspace` (fused kernels) gets a buffer live during its call alone, sized
//! as for graph models: the sum of its constant allocations read from its C.

use crate::error::{Error, Result};
use crate::model::{CFile, RelaxArg, RelaxProgram, TensorId, TensorPlace};
use crate::plan::pack::{self, Interval, align_up};

/// A Relax program's arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxPlan {
    /// The tensors that own arena bytes (tensors in TVM storage, outputs copied from an input
    /// or a weight), in tensor order.
    pub buffers: Vec<TensorId>,
    /// Their lifetimes (in kernel calls; outputs end at `calls.len()`).
    pub intervals: Vec<Interval>,
    /// Their offsets in the arena.
    pub offsets: Vec<u64>,
    /// The arena's size.
    pub arena: u64,
    /// The liveness bound: the most bytes (each aligned) live at one step. No placement needs
    /// less.
    pub bound: u64,
    /// The sum of TVM's own `alloc_storage` sizes, aligned the same way.
    pub tvm_storage: u64,
    /// Each kernel call's scratch region in the arena: `(offset, bytes)`, `None` without scratch.
    pub scratch: Vec<Option<(u64, u64)>>,
}

/// Scratch bytes each call of `p` needs, from the kernels' C (`lib0.c`): the sum of a kernel's
/// constant `TVMBackendAllocWorkspace` sizes, each aligned to `align`. A kernel whose C is not
/// given counts none; one allocating a computed size is an error naming it.
pub fn kernel_scratch(p: &RelaxProgram, c: Option<&CFile>, align: u64) -> Result<Vec<u64>> {
    let Some(c) = c else { return Ok(vec![0; p.calls.len()]) };
    let by_name: std::collections::HashMap<&str, &crate::model::CFunction> =
        c.functions.iter().filter(|f| f.defined).map(|f| (f.name.as_str(), f)).collect();
    p.calls
        .iter()
        .map(|call| match by_name.get(format!("__tvm_ffi_{}", call.kernel).as_str()) {
            None => Ok(0),
            Some(f) => f.workspace_upper_bound(align).ok_or_else(|| {
                Error::unsupported(format!("kernel `{}` allocates workspace of a computed size", call.kernel))
            }),
        })
        .collect()
}

impl RelaxPlan {
    /// The arena offset of any tensor in storage or viewing one, `None` for inputs and weights.
    pub fn offset_of(&self, p: &RelaxProgram, t: TensorId) -> Option<u64> {
        let root = p.root(t);
        self.buffers.iter().position(|&b| b == root).map(|i| self.offsets[i])
    }
}

/// Plans the arena with buffers aligned to `align`; `scratch[k]` is the scratch call `k` needs
/// ([`kernel_scratch`]; shorter or empty: none).
pub fn plan(p: &RelaxProgram, align: u64, scratch: &[u64]) -> RelaxPlan {
    let mut first = vec![None::<usize>; p.tensors.len()];
    let mut last = vec![0usize; p.tensors.len()];
    let mut touch = |t: TensorId, step: usize| {
        let r = p.root(t);
        first[r] = Some(first[r].map_or(step, |f: usize| f.min(step)));
        last[r] = last[r].max(step);
    };
    for (step, c) in p.calls.iter().enumerate() {
        for a in &c.args {
            if let RelaxArg::Tensor(t) = a {
                touch(*t, step);
            }
        }
    }
    let end = p.calls.len();
    for &o in &p.outputs {
        touch(o, end);
    }
    let mut buffers = Vec::new();
    let mut intervals = Vec::new();
    for (t, tensor) in p.tensors.iter().enumerate() {
        if !matches!(tensor.place, TensorPlace::Storage { .. } | TensorPlace::Copy(_)) {
            continue;
        }
        // A tensor no call and no output touches needs no bytes.
        let Some(f) = first[t] else { continue };
        buffers.push(t);
        intervals.push(Interval { size: tensor.bytes, first: f, last: last[t] });
    }
    let tensors = intervals.len();
    let mut scratch_calls = Vec::new();
    for (k, &bytes) in scratch.iter().enumerate().take(end) {
        if bytes > 0 {
            scratch_calls.push(k);
            intervals.push(Interval { size: bytes, first: k, last: k });
        }
    }
    let (mut offsets, arena) = pack::pack(&intervals, align);
    let bound = (0..=end)
        .map(|s| {
            intervals
                .iter()
                .filter(|i| i.first <= s && s <= i.last)
                .map(|i| align_up(i.size, align))
                .fold(0u64, u64::saturating_add)
        })
        .max()
        .unwrap_or(0);
    let tvm_storage = p.storages.iter().map(|s| align_up(s.bytes, align)).fold(0, u64::saturating_add);
    debug_assert!(pack::verify(&intervals, &offsets, arena));
    let mut scratch_at = vec![None; end];
    for (i, &k) in scratch_calls.iter().enumerate() {
        scratch_at[k] = Some((offsets[tensors + i], intervals[tensors + i].size));
    }
    intervals.truncate(tensors);
    offsets.truncate(tensors);
    RelaxPlan { buffers, intervals, offsets, arena, bound, tvm_storage, scratch: scratch_at }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::relax::{load, lower::lower};
    use std::path::Path;

    /// On every fixture: the arena is a valid packing, at most the sum of TVM's storage sizes
    /// (plus the outputs copied from an input or a constant, which TVM returns as they are),
    /// and equal to the liveness bound.
    #[test]
    fn arenas_are_within_tvms_storage_and_at_the_liveness_bound() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
        let mut n = 0;
        for e in std::fs::read_dir(root).unwrap() {
            let d = e.unwrap().path();
            if !d.join("vectors").is_dir() {
                continue;
            }
            let p = lower(&load(&d.join("model.tar")).unwrap().1).unwrap();
            let plan = plan(&p, 16, &[]);
            assert!(pack::verify(&plan.intervals, &plan.offsets, plan.arena), "{}", d.display());
            let copies: u64 = p
                .tensors
                .iter()
                .filter(|t| matches!(t.place, TensorPlace::Copy(_)))
                .map(|t| align_up(t.bytes, 16))
                .sum();
            assert!(plan.arena <= plan.tvm_storage + copies, "{}: {plan:?}", d.display());
            assert_eq!(plan.arena, plan.bound, "{}", d.display());
            // Every output has bytes of the arena, and no two outputs share any.
            let outs: Vec<u64> = p.outputs.iter().map(|&o| plan.offset_of(&p, o).unwrap()).collect();
            for (i, &o) in p.outputs.iter().enumerate() {
                for (j, &o2) in p.outputs.iter().enumerate().skip(i + 1) {
                    if p.root(o) != p.root(o2) {
                        assert_ne!(outs[i], outs[j], "{}", d.display());
                    }
                }
            }
            n += 1;
        }
        assert_eq!(n, 20);
    }

    #[test]
    fn mlp_arena() {
        let p = lower(
            &load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax/mlp-f32-c/model.tar")).unwrap().1,
        )
        .unwrap();
        let plan = plan(&p, 16, &[]);
        // TVM: 128 + 128 + 48 (40 aligned); mlf: two 128-byte hidden tensors live together at most,
        // then the logits and the softmax output.
        assert_eq!(plan.tvm_storage, 128 + 128 + 48);
        assert_eq!(plan.bound, 256);
        assert_eq!(plan.arena, 256);
    }
}
