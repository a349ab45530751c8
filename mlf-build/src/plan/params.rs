//! Where external parameters sit in the static RAM beside the arena: the resident region (every
//! parameter file one after another) and, for streamed graph models, the staging buffer one call
//! reads its parameters from.

use super::graph::{GraphPlan, OpCall, Slot};
use super::pack::align_up;
use crate::model::Placement;
use crate::plan::split::Split;

/// Offsets of buffers of `sizes` bytes placed one after another, each aligned to `align`, and
/// the bytes of the region (rounded up to `align`).
pub fn sequential(sizes: impl IntoIterator<Item = u64>, align: u64) -> (Vec<u64>, u64) {
    let mut cursor = 0u64;
    let mut offsets = Vec::new();
    for size in sizes {
        cursor = align_up(cursor, align);
        offsets.push(cursor);
        cursor = cursor.saturating_add(size);
    }
    (offsets, align_up(cursor, align))
}

/// The parameter region of a graph model (nothing for embedded parameters): the offset of each file
/// (resident; empty when streamed) and the region's bytes (the resident region, or the staging
/// buffer: the most parameter bytes one call reads).
pub fn graph_region(plan: &GraphPlan, split: &Split, placement: Placement) -> (Vec<u64>, u64) {
    match placement {
        Placement::Embedded => (Vec::new(), 0),
        Placement::Resident => sequential(split.files.iter().map(|f| f.bytes()), plan.align),
        Placement::Streamed => (Vec::new(), staging_bytes(plan, split)),
    }
}

/// The largest number of parameter bytes one call reads (the streamed staging buffer).
pub fn staging_bytes(plan: &GraphPlan, split: &Split) -> u64 {
    plan.calls.iter().map(|c| call_staging(c, plan, split).1).max().unwrap_or(0)
}

/// The staging layout of call `c`: each distinct parameter file it reads with its offset, packed
/// in decreasing order of alignment (so no padding is needed), and the bytes they take.
pub fn call_staging(c: &OpCall, plan: &GraphPlan, split: &Split) -> (Vec<(usize, u64)>, u64) {
    let mut files: Vec<usize> = Vec::new();
    for &e in &c.args {
        if let Slot::Param { index } = plan.slots[e] {
            let k = split.of_param[index];
            if !files.contains(&k) {
                files.push(k);
            }
        }
    }
    let elem_align = |k: usize| split.files[k].dtype.elem_bytes().next_power_of_two().max(1);
    files.sort_by_key(|&k| std::cmp::Reverse(elem_align(k)));
    let mut cursor = 0u64;
    let mut out = Vec::new();
    for k in files {
        cursor = align_up(cursor, elem_align(k));
        out.push((k, cursor));
        cursor = cursor.saturating_add(split.files[k].bytes());
    }
    (out, cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_aligns_every_start_and_the_end() {
        assert_eq!(sequential([10, 20, 16], 16), (vec![0, 16, 48], 64));
        assert_eq!(sequential([9648], 64), (vec![0], 9664));
        assert_eq!(sequential([], 16), (vec![], 0));
    }
}
