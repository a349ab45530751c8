//! Where a graph's buffers go in the arena: three layouts computed and the smallest chosen, then
//! every entry, output and copy given its place; and TVM's own figures for comparison.

use super::types::{CopyIn, OutputPlace, PlacedBuffer, Slot, TvmPlan};
use super::usage::{Buffer, Usage};
use crate::error::{Error, Result};
use crate::model::{ArgBinding, Graph, ModelDesc, NodeOp};
use crate::plan::pack::{self, Interval, align_up};
use crate::support::names;

/// The name of the layout with in-place operators.
pub(super) const IN_PLACE: &str = "liveness, in place";

/// The layout chosen for the arena.
pub(super) struct Chosen<'a> {
    /// Its name (`liveness`, `liveness, in place`, `liveness by storage id`, `storage-id`).
    pub(super) name: &'static str,
    /// The buffers it places (alias classes or storage ids).
    pub(super) bufs: &'a [Buffer],
    /// Offsets of the arena buffers, then of the scratch windows, then of the output copies.
    pub(super) offsets: Vec<u64>,
    /// Arena bytes.
    pub(super) total: u64,
    /// Arena bytes of TVM's storage-id layout, for comparison.
    pub(super) storage_id_layout_bytes: u64,
}

impl Chosen<'_> {
    /// How many of the buffers are in the arena (not used in place).
    fn arena_count(&self) -> usize {
        arena_count(self.bufs)
    }

    /// The offsets of the arena buffers, of the scratch windows and of the output copies.
    fn split_offsets(&self, n_scratch: usize) -> (&[u64], &[u64], &[u64]) {
        let (bufs, rest) = self.offsets.split_at(self.arena_count());
        let (scratch, extra) = rest.split_at(n_scratch);
        (bufs, scratch, extra)
    }
}

fn arena_count(bufs: &[Buffer]) -> usize {
    bufs.iter().filter(|b| b.external.is_none()).count()
}

/// Whether head entry `e` is an input or parameter used in place (it gets an arena copy).
fn head_external(bufs: &[Buffer], e: usize) -> bool {
    bufs.iter().any(|b| b.external.is_some() && b.entries.contains(&e))
}

/// What a partition places in the arena: its arena buffers, every operator's scratch, then the
/// arena copies of outputs that are inputs or parameters.
pub(super) fn items_of(graph: &Graph, usage: &Usage, bufs: &[Buffer]) -> Vec<Interval> {
    // Steps in halves: an in-place operator's dying input ends in the first half of its call,
    // the output that overwrites it starts in the second.
    let half = |first: usize, last: usize| (first.saturating_mul(2), last.saturating_mul(2).saturating_add(1));
    let mut items: Vec<Interval> = bufs
        .iter()
        .filter(|b| b.external.is_none())
        .map(|b| {
            let (first, last) = b.half_steps();
            Interval { size: b.size, first, last }
        })
        .collect();
    items.extend(usage.scratch.iter().map(|s| {
        let (first, last) = half(s.first, s.last);
        Interval { size: s.size, first, last }
    }));
    let copies = graph.heads.iter().map(|h| graph.eid(*h)).filter(|&e| head_external(bufs, e));
    let (end_first, end_last) = half(usage.end_step, usage.end_step);
    items.extend(copies.map(|e| Interval { size: graph.entry_bytes(e), first: end_first, last: end_last }));
    items
}

/// One place per buffer, one scratch region shared by every operator, then the copies.
fn sequential(items: &[Interval], n_arena: usize, n_scratch: usize, align: u64) -> (Vec<u64>, u64) {
    let (bufs, rest) = items.split_at(n_arena);
    let (scratch, extra) = rest.split_at(n_scratch);
    let mut cursor = 0u64;
    let mut offsets = Vec::with_capacity(items.len());
    for b in bufs {
        offsets.push(cursor);
        cursor = cursor.saturating_add(align_up(b.size, align));
    }
    offsets.extend(std::iter::repeat_n(cursor, scratch.len()));
    cursor = cursor.saturating_add(scratch.iter().map(|i| align_up(i.size, align)).max().unwrap_or(0));
    for x in extra {
        offsets.push(cursor);
        cursor = cursor.saturating_add(align_up(x.size, align));
    }
    (offsets, cursor)
}

/// The smallest of four layouts (the first of equals): alias classes packed by liveness, the
/// same with in-place operators, storage ids packed by liveness, and TVM's storage-id layout.
pub(super) fn choose<'a>(
    graph: &Graph,
    usage: &Usage,
    classes: &'a [Buffer],
    in_place: &'a [Buffer],
    sids: &'a [Buffer],
    align: u64,
) -> Result<Chosen<'a>> {
    let (class_items, sid_items) = (items_of(graph, usage, classes), items_of(graph, usage, sids));
    let in_place_items = items_of(graph, usage, in_place);
    let n_scratch = usage.scratch.len();
    let candidates = [
        ("liveness", classes, &class_items, pack::pack(&class_items, align)),
        (IN_PLACE, in_place, &in_place_items, pack::pack(&in_place_items, align)),
        ("liveness by storage id", sids, &sid_items, pack::pack(&sid_items, align)),
        ("storage-id", sids, &sid_items, sequential(&sid_items, arena_count(sids), n_scratch, align)),
    ];
    let storage_id_layout_bytes = candidates[3].3.1;
    let (name, bufs, items, (offsets, total)) = candidates.into_iter().min_by_key(|c| c.3.1).expect("four candidates");
    if !pack::verify(items, &offsets, total) {
        return Err(Error::invalid("internal error: the memory plan overlaps live buffers"));
    }
    Ok(Chosen { name, bufs, offsets, total, storage_id_layout_bytes })
}

/// Every entry's place, the copies before the first call, and the outputs.
pub(super) struct Placed {
    pub(super) slots: Vec<Slot>,
    pub(super) copies_in: Vec<CopyIn>,
    pub(super) outputs: Vec<OutputPlace>,
}

/// Gives every entry, scratch window and output its place in the chosen layout.
pub(super) fn place(desc: &ModelDesc, graph: &Graph, usage: &mut Usage, chosen: &Chosen<'_>) -> Result<Placed> {
    let (bufs_offsets, scratch_offsets, extra_offsets) = chosen.split_offsets(usage.scratch.len());
    let slot_of_arg = |a: ArgBinding, e: usize| -> Slot {
        match a {
            ArgBinding::Input(index) => Slot::Input { index },
            ArgBinding::Param(index) => match desc.params[index].linked {
                Some(_) => Slot::Linked { index, sid: graph.storage_id[e] },
                None => Slot::Param { index },
            },
        }
    };
    let mut slots = vec![Slot::Unused; graph.num_entries()];
    let mut copies_in = Vec::new();
    let mut arena_k = 0;
    for b in chosen.bufs.iter() {
        if let Some(a) = b.external {
            for &e in &b.entries {
                slots[e] = slot_of_arg(a, usage.root[e]);
            }
            continue;
        }
        let offset = bufs_offsets[arena_k];
        arena_k += 1;
        for &e in &b.entries {
            slots[e] = Slot::Arena { offset };
        }
        if let Some(a) = b.copy_in {
            let src =
                b.entries.iter().copied().find(|&e| usage.arg_of[usage.root[e]].is_some()).unwrap_or(b.entries[0]);
            copies_in.push(CopyIn { from: slot_of_arg(a, src), offset, bytes: graph.entry_bytes(src) });
        }
    }
    for (c, &off) in usage.calls.iter_mut().zip(scratch_offsets) {
        c.scratch.0 = off;
    }
    let mut extra = extra_offsets.iter();
    let mut outputs = Vec::new();
    for h in &graph.heads {
        let e = graph.eid(*h);
        if head_external(chosen.bufs, e) {
            let offset = *extra.next().ok_or_else(|| Error::invalid("internal error: an output copy has no place"))?;
            outputs.push(OutputPlace { eid: e, offset, copy_from: Some(slots[e]) });
        } else {
            let Slot::Arena { offset } = slots[e] else {
                return Err(Error::invalid("internal error: an output has no place"));
            };
            outputs.push(OutputPlace { eid: e, offset, copy_from: None });
        }
    }
    Ok(Placed { slots, copies_in, outputs })
}

/// What TVM's own graph executor would allocate: one buffer per storage id (sized to its
/// largest entry, rounded up to 4 bytes) and the largest operator workspace metadata records.
pub(super) fn tvm_plan(desc: &ModelDesc, graph: &Graph, usage: &Usage) -> TvmPlan {
    let mut tvm = TvmPlan::default();
    let n_sids = graph.storage_id.iter().copied().max().map_or(0, |m| m + 1);
    let mut sid_bytes = vec![0u64; n_sids];
    let mut sid_arg: Vec<Option<ArgBinding>> = vec![None; n_sids];
    for e in 0..graph.num_entries() {
        let s = graph.storage_id[e];
        sid_bytes[s] = sid_bytes[s].max(graph.entry_bytes(e));
        if sid_arg[s].is_none() {
            sid_arg[s] = usage.arg_of[usage.root[e]];
        }
    }
    for s in 0..n_sids {
        let b = align_up(sid_bytes[s], 4);
        tvm.storage_bytes = tvm.storage_bytes.saturating_add(b);
        match sid_arg[s] {
            Some(ArgBinding::Param(_)) => tvm.param_bytes = tvm.param_bytes.saturating_add(b),
            Some(ArgBinding::Input(_)) => tvm.input_bytes = tvm.input_bytes.saturating_add(b),
            None => tvm.activation_bytes = tvm.activation_bytes.saturating_add(b),
        }
    }
    tvm.workspace_bytes = desc.memory.operator_workspace.iter().map(|(_, b)| *b).max().unwrap_or(0);
    tvm
}

/// The arena buffers and scratch windows as placed, for pictures: each named after the tensor
/// it holds (the graph node that writes it) or the operator whose scratch it is.
pub(super) fn placed_buffers(graph: &Graph, usage: &Usage, chosen: &Chosen<'_>) -> Vec<PlacedBuffer> {
    let (bufs_offsets, scratch_offsets, _) = chosen.split_offsets(usage.scratch.len());
    let mut buffers = Vec::new();
    for (arena_k, b) in chosen.bufs.iter().filter(|b| b.external.is_none()).enumerate() {
        let (name, label) = tensor_words(graph, &b.entries);
        buffers.push(PlacedBuffer {
            name,
            label,
            offset: bufs_offsets[arena_k],
            size: b.size,
            first: b.first,
            last: b.last,
            scratch: false,
        });
    }
    for (k, iv) in usage.scratch.iter().enumerate() {
        if iv.size > 0 {
            let func = &usage.calls[k].func;
            buffers.push(PlacedBuffer {
                name: format!("scratch of {}", names::operator(func)),
                label: format!("scratch memory of operator {func} (call {k}, TVMBackendAllocWorkspace)"),
                offset: scratch_offsets[k],
                size: iv.size,
                first: iv.first,
                last: iv.last,
                scratch: true,
            });
        }
    }
    buffers
}

/// A short name and a description in words of the tensor held by a buffer of `entries`: the
/// first entry's node (the operator that writes it, or a graph input), whether it is an output
/// of the model, its dtype and shape, and how many reshapes share it.
fn tensor_words(graph: &Graph, entries: &[usize]) -> (String, String) {
    let Some(&eid) = entries.iter().min() else { return (String::new(), String::new()) };
    let node_id = graph.node_row_ptr.partition_point(|&start| start <= eid).saturating_sub(1);
    let Some(node) = graph.nodes.get(node_id) else { return (format!("entry {eid}"), format!("entry {eid}")) };
    let index = eid - graph.node_row_ptr[node_id];
    let output_of = |what: &str| {
        if node.num_outputs > 1 { format!("output {index} of {what}") } else { format!("output of {what}") }
    };
    let (name, what) = match &node.op {
        NodeOp::Call { func_name, .. } => {
            let op = names::operator(func_name).to_string();
            let what = output_of(&format!("operator {func_name}"));
            (op, what)
        }
        NodeOp::Null | NodeOp::Nop => (node.name.clone(), format!("tensor {}", node.name)),
    };
    let head = graph.heads.iter().position(|&h| entries.contains(&graph.eid(h)));
    let (name, what) = match head {
        Some(i) => (format!("model output {i}: {name}"), format!("model output {i}, the {what}")),
        None => (name, what),
    };
    let (dtype, shape) = (graph.dltype.get(eid), graph.shape.get(eid));
    let mut label = match (dtype, shape) {
        (Some(d), Some(s)) => format!("{what} ({d} {s:?})"),
        _ => what,
    };
    if entries.len() > 1 {
        label.push_str(&format!(", shared with {} reshape{} of it", entries.len() - 1, plural(entries.len() - 1)));
    }
    (name, label)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
