//! Where external parameters sit in the static RAM beside the arena: the resident region (every
//! parameter file one after another; lazily loaded parameters use the same layout, filled as
//! calls first need them) and, for streamed graph models, the staging buffer one call reads its
//! parameters from.

use std::collections::BTreeMap;

use super::graph::{GraphPlan, OpCall, Slot};
use super::pack::align_up;
use crate::model::Placement;
use crate::plan::split::{ArrayTable, Split};

/// Alignment of a constant array taken out of the C, in the staging buffer (TVM declares them
/// `aligned(16)`).
pub const ARRAY_ALIGN: u64 = 16;

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
/// (resident and lazy; empty when streamed) and the region's bytes (the resident region, or the
/// staging buffer: the most parameter bytes one call reads).
pub fn graph_region(plan: &GraphPlan, split: &Split, placement: Placement) -> (Vec<u64>, u64) {
    match placement {
        Placement::Embedded => (Vec::new(), 0),
        Placement::Resident | Placement::Lazy => sequential(split.files.iter().map(|f| f.bytes()), plan.align),
        Placement::Streamed => (Vec::new(), staging_bytes(plan, split)),
    }
}

/// The largest number of parameter bytes one call reads (the streamed staging buffer): its
/// parameters and the constant arrays its function reads.
pub fn staging_bytes(plan: &GraphPlan, split: &Split) -> u64 {
    plan.calls.iter().map(|c| call_arrays(c, split, call_staging(c, plan, split).1).1).max().unwrap_or(0)
}

/// The parameter region of an AOT model (nothing for embedded parameters): the offset of each file
/// (resident and lazy, or streamed constant pools: the main reads them all) and the region's
/// bytes; with constant arrays streamed, no offsets and the most bytes one of the main's calls
/// reads.
pub fn aot_region(split: &Split, placement: Placement, align: u64) -> (Vec<u64>, u64) {
    match (&split.arrays, placement) {
        (_, Placement::Embedded) => (Vec::new(), 0),
        (Some(t), Placement::Streamed) => {
            (Vec::new(), t.steps.iter().map(|(_, slots)| array_staging(t, split, slots, 0).1).max().unwrap_or(0))
        }
        _ => sequential(split.files.iter().map(|f| f.bytes()), align),
    }
}

/// The constant arrays the function of graph call `c` reads, staged after `base` bytes: each
/// distinct file with its offset in the staging buffer, and the end.
pub fn call_arrays(c: &OpCall, split: &Split, base: u64) -> (Vec<(usize, u64)>, u64) {
    match split.arrays.as_ref().and_then(|t| t.users.get(&c.func).map(|slots| (t, slots))) {
        Some((t, slots)) => array_staging(t, split, slots, base),
        None => (Vec::new(), base),
    }
}

/// The staging layout of the arrays in table entries `slots`, after `base` bytes: each distinct
/// file with its offset (aligned to [`ARRAY_ALIGN`]), and the end.
pub fn array_staging(table: &ArrayTable, split: &Split, slots: &[usize], base: u64) -> (Vec<(usize, u64)>, u64) {
    let mut cursor = base;
    let mut out = Vec::new();
    for f in table.files_of(slots) {
        cursor = align_up(cursor, ARRAY_ALIGN);
        out.push((f, cursor));
        cursor += split.files[f].bytes();
    }
    (out, cursor)
}

/// Where the sections taken out of LLVM objects lie in the parameter region and in the staging
/// buffer alike (their files come first, one after another, each aligned to `align`): the offset
/// of each of those files, and the end of their area.
pub fn object_area(split: &Split, align: u64) -> (Vec<u64>, u64) {
    let n = split.objects.as_ref().map_or(0, |o| o.file_count());
    if n == 0 {
        return (Vec::new(), 0);
    }
    sequential(split.files[..n].iter().map(|f| f.bytes()), align)
}

/// For each object member, its taken sections (index in its section table, offset in the
/// parameter region or staging buffer: [`object_area`]), for the build step to retarget.
pub fn object_offsets(split: &Split, align: u64) -> BTreeMap<String, Vec<(usize, u64)>> {
    let mut out: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
    let (offsets, _) = object_area(split, align);
    for s in split.objects.iter().flat_map(|o| &o.sections) {
        out.entry(s.member.clone()).or_default().push((s.index, offsets[s.file]));
    }
    out
}

/// The staging layout of call `c`: each distinct parameter file it reads with its offset (the
/// sections of LLVM objects its function reads at their fixed place in the object area, then
/// its parameters after that area, packed in decreasing order of alignment so no padding is
/// needed), and the end of what it reads.
pub fn call_staging(c: &OpCall, plan: &GraphPlan, split: &Split) -> (Vec<(usize, u64)>, u64) {
    let (fixed, base) = object_area(split, plan.align);
    let mut out: Vec<(usize, u64)> = Vec::new();
    if let Some(o) = &split.objects {
        out.extend(o.files_of(&o.read_by(&c.func)).into_iter().map(|f| (f, fixed[f])));
    }
    let mut files: Vec<usize> = Vec::new();
    for &e in &c.args {
        if let Slot::Param { index } = plan.slots[e] {
            let k = split.of_param[index];
            if k < fixed.len() {
                // The same bytes as a section's: read where the section lies.
                if !out.iter().any(|&(f, _)| f == k) {
                    out.push((k, fixed[k]));
                }
            } else if !files.contains(&k) {
                files.push(k);
            }
        }
    }
    let elem_align = |k: usize| split.files[k].dtype.elem_bytes().next_power_of_two().max(1);
    files.sort_by_key(|&k| std::cmp::Reverse(elem_align(k)));
    let mut cursor = base;
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
