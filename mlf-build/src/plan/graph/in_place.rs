//! In-place operators: an operator's output takes bytes of an input that dies at that
//! operator, where the kernel's C proves it safe ([`CFunction::in_place`]: the C scanner's
//! proofs that the kernel's stores into the output never clobber an element of the input still
//! to be read), so the arena can go below the liveness bound at tensor granularity.
//!
//! One pass over the calls in order (each call's proofs are a handful): O(n) after the lookups.

use std::collections::HashMap;

use super::types::InPlace;
use super::usage::{Buffer, Usage};
use crate::model::{CFunction, Graph, ModelDesc};

/// The kernels' in-place proofs by function name (the first definition of a name).
fn proofs(desc: &ModelDesc) -> HashMap<&str, &CFunction> {
    let mut by_name = HashMap::new();
    for f in desc.code.sources.iter().flat_map(|s| &s.scan.functions).filter(|f| f.defined && f.is_packed()) {
        by_name.entry(f.name.as_str()).or_insert(f);
    }
    by_name
}

/// `bufs` with the proven in-place operators applied, and those operators.
///
/// An input can give its bytes when its buffer (with what already joined it) is in the arena,
/// not filled from an input or parameter, passed once to the call and dies there; an output can
/// take them when its buffer is in the arena, passed once and starts at the call. Then:
/// - a same-index proof joins the output's buffer to the input's when both have the same size
///   (one place, live from the input's first use to the output's last);
/// - with phase proofs, the output proven against the most bytes of dying inputs starts in the
///   second half of the call and those inputs end in the first half, so the packer may give it
///   any of their bytes. Only one output of a call starts late, so every input that ends early
///   is proven against every output that may take its bytes.
pub(super) fn join(desc: &ModelDesc, graph: &Graph, usage: &Usage, bufs: Vec<Buffer>) -> (Vec<Buffer>, Vec<InPlace>) {
    let proofs = proofs(desc);
    let mut buf_of = vec![usize::MAX; graph.num_entries()];
    for (k, b) in bufs.iter().enumerate() {
        for &e in &b.entries {
            buf_of[e] = k;
        }
    }
    let mut g = Groups {
        group: (0..bufs.len()).collect(),
        last: bufs.iter().map(|b| b.last).collect(),
        size: bufs.iter().map(|b| b.size).collect(),
        ends_early: vec![false; bufs.len()],
        starts_late: vec![false; bufs.len()],
    };
    let mut joined = Vec::new();
    for c in &usage.calls {
        let Some(f) = proofs.get(c.func.as_str()) else { continue };
        let n_in = graph.nodes[c.node].inputs.len();
        let groups: Vec<usize> = c.args.iter().map(|&e| g.group[buf_of[e]]).collect();
        let once = |k: usize| groups.iter().filter(|&&x| x == groups[k]).count() == 1;
        let plain = |k: usize| {
            let b = &bufs[buf_of[c.args[k]]];
            b.external.is_none() && b.copy_in.is_none() && once(k)
        };
        let gives = |k: usize, g: &Groups| k < n_in && plain(k) && g.last[groups[k]] == c.node;
        let takes = |k: usize| {
            let bb = buf_of[c.args[k]];
            k >= n_in && k < c.args.len() && plain(k) && groups[k] == bb && bufs[bb].first == c.node
        };
        let mut used = vec![false; c.args.len()];
        for p in f.in_place.iter().filter(|p| p.same_index) {
            let (a, b) = (p.read, p.written);
            if !gives(a, &g) || !takes(b) || used[a] || used[b] {
                continue;
            }
            let (ga, bb) = (groups[a], groups[b]);
            if g.size[ga] != bufs[bb].size {
                continue;
            }
            g.group[bb] = ga;
            g.last[ga] = bufs[bb].last;
            used[a] = true;
            used[b] = true;
            joined.push(InPlace { node: c.node, input: c.args[a], output: c.args[b] });
        }
        // Phases: the one output that can take the most bytes of dying inputs.
        let mut best: Option<(u64, usize)> = None;
        for b in (n_in..c.args.len()).filter(|&b| !used[b] && takes(b)) {
            let bytes: u64 = f
                .in_place
                .iter()
                .filter(|p| !p.same_index && p.written == b && !used.get(p.read).copied().unwrap_or(true))
                .filter(|p| gives(p.read, &g))
                .map(|p| g.size[groups[p.read]])
                .sum();
            if bytes > 0 && best.is_none_or(|(most, _)| bytes > most) {
                best = Some((bytes, b));
            }
        }
        let Some((_, b)) = best else { continue };
        g.starts_late[groups[b]] = true;
        for p in f.in_place.iter().filter(|p| !p.same_index && p.written == b) {
            if !used.get(p.read).copied().unwrap_or(true) && gives(p.read, &g) {
                g.ends_early[groups[p.read]] = true;
                used[p.read] = true;
                joined.push(InPlace { node: c.node, input: c.args[p.read], output: c.args[b] });
            }
        }
    }
    (merge(bufs, &g), joined)
}

/// Buffers joined by same-index proofs, and the half-call flags of phase proofs, by buffer.
struct Groups {
    /// Each buffer's group: itself, or the buffer (earlier in call order) it joined.
    group: Vec<usize>,
    /// Each group's last step and size.
    last: Vec<usize>,
    size: Vec<u64>,
    /// Each group ends in the first half of its last call.
    ends_early: Vec<bool>,
    /// Each buffer starts in the second half of its first call.
    starts_late: Vec<bool>,
}

/// One buffer per group (at its first member's place in the order): the entries of all,
/// as large as the largest, live from the first one's start to the last one's end, with the
/// group's half-call flags.
fn merge(bufs: Vec<Buffer>, g: &Groups) -> Vec<Buffer> {
    // A group points to a buffer earlier in call order; follow the chain to its root.
    let mut root: Vec<usize> = g.group.clone();
    for k in 0..root.len() {
        let mut r = root[k];
        while root[r] != r {
            r = root[r];
        }
        root[k] = r;
    }
    let mut out: Vec<Option<Buffer>> = Vec::with_capacity(bufs.len());
    let mut members: Vec<(usize, Buffer)> = Vec::new();
    for (k, mut b) in bufs.into_iter().enumerate() {
        if root[k] == k {
            b.ends_early = g.ends_early[k];
            b.starts_late = g.starts_late[k];
            out.push(Some(b));
        } else {
            out.push(None);
            members.push((root[k], b));
        }
    }
    for (r, b) in members {
        let Some(target) = out[r].as_mut() else { continue };
        target.entries.extend(b.entries);
        target.size = target.size.max(b.size);
        target.first = target.first.min(b.first);
        target.last = target.last.max(b.last);
    }
    out.into_iter().flatten().collect()
}
