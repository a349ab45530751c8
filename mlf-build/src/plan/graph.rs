//! The static memory plan of a graph-executor model.
//!
//! Every graph entry gets a place: the caller's input (used in place), a parameter (used in
//! place, in flash), a linked parameter (in the C's read-only data), or an offset in one arena.
//! Storage ids whose lifetimes do not overlap share bytes; each operator's scratch memory
//! (`TVMBackendAllocWorkspace`) is one more buffer, live only during that operator. `__nop`
//! entries alias their input. TVM's own plan (one buffer per storage id) is computed beside it.

use serde::Serialize;

use super::pack::{self, Interval, align_up, alignment_slack};
use crate::error::{Error, Result};
use crate::model::{ArgBinding, GraphExec, ModelDesc, NodeOp};

/// Where one graph entry lives at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Slot {
    /// Not referenced by any call or output.
    Unused,
    /// The caller's input `index`, used in place (kernels only read it).
    Input {
        /// Input index.
        index: usize,
    },
    /// Parameter `index`, used in place.
    Param {
        /// Parameter index.
        index: usize,
    },
    /// Parameter `index`, already in the C (TVM 0.8 `_lookup_linked_param` for storage `sid`).
    Linked {
        /// Parameter index.
        index: usize,
        /// Storage id passed to `_lookup_linked_param`.
        sid: usize,
    },
    /// `offset` in the arena.
    Arena {
        /// Byte offset.
        offset: u64,
    },
}

/// One operator call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpCall {
    /// Graph node id.
    pub node: usize,
    /// C function.
    pub func: String,
    /// Entry ids of its arguments: inputs, then outputs.
    pub args: Vec<usize>,
    /// Its scratch window in the arena: offset and bytes.
    pub scratch: (u64, u64),
}

/// Data copied into the arena before the first call (an input or parameter whose storage the
/// model also writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CopyIn {
    /// Source: an input or a parameter slot.
    pub from: Slot,
    /// Destination offset.
    pub offset: u64,
    /// Bytes.
    pub bytes: u64,
}

/// An output of the model: where it is after the last call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OutputPlace {
    /// The head entry.
    pub eid: usize,
    /// Offset in the arena.
    pub offset: u64,
    /// When the head is an input or a parameter, it is copied here after the calls.
    pub copy_from: Option<Slot>,
}

/// What TVM's own graph executor would allocate for the same model: one buffer per storage id
/// (sized to its largest entry, rounded up to 4 bytes), plus a workspace pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TvmPlan {
    /// All storage ids (parameters and inputs included: TVM copies both into its storage).
    pub storage_bytes: u64,
    /// Storage ids of parameters.
    pub param_bytes: u64,
    /// Storage ids of inputs.
    pub input_bytes: u64,
    /// The other storage ids (activations and outputs).
    pub activation_bytes: u64,
    /// The largest operator workspace recorded in metadata.
    pub workspace_bytes: u64,
}

/// A graph model's plan.
#[derive(Clone, Debug, Serialize)]
pub struct GraphPlan {
    /// Alignment of every arena buffer and workspace allocation.
    pub align: u64,
    /// Place of every entry (index = entry id).
    pub slots: Vec<Slot>,
    /// Calls in order.
    pub calls: Vec<OpCall>,
    /// Copies before the first call.
    pub copies_in: Vec<CopyIn>,
    /// Outputs in order.
    pub outputs: Vec<OutputPlace>,
    /// Arena bytes (activations, outputs, scratch).
    pub arena_bytes: u64,
    /// Which layout was chosen, the smallest of three: `liveness` (alias classes with disjoint
    /// lifetimes share bytes), `liveness by storage id` (TVM's storage ids packed the same way)
    /// or `storage-id` (TVM's layout: one buffer per storage id, one shared scratch region).
    pub layout: &'static str,
    /// Arena bytes of the storage-id layout, for comparison.
    pub storage_id_layout_bytes: u64,
    /// TVM's own figures.
    pub tvm: TvmPlan,
    /// Placed buffers (for pictures): storage id (or `None` for scratch), offset, size, first
    /// and last step.
    pub buffers: Vec<PlacedBuffer>,
}

/// A placed arena buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlacedBuffer {
    /// What it is (`sid 3`, `scratch of call 2`).
    pub label: String,
    /// Offset.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// First step (node index) it is live.
    pub first: usize,
    /// Last step.
    pub last: usize,
    /// Whether it is an operator's scratch (`TVMBackendAllocWorkspace`) rather than a tensor.
    pub scratch: bool,
}

/// Scratch bytes operator function `func` needs from `TVMBackendAllocWorkspace` with allocations
/// aligned to `align`: the sum of its constant allocations as read from its C (an upper bound
/// of its peak), or, when the C is not available or sizes are computed, the metadata figure
/// plus alignment slack.
pub fn operator_scratch(desc: &ModelDesc, func: &str, align: u64) -> Result<u64> {
    if let Some((_, f)) = desc.code.definition(func) {
        if let Some(n) = f.workspace_upper_bound(align) {
            return Ok(n);
        }
        let meta = desc.memory.operator_workspace.iter().find(|(n, _)| n == func).map(|(_, b)| *b);
        return meta.map(|m| m + alignment_slack(align, f.workspace_allocs.len() as u64)).ok_or_else(|| {
            Error::unsupported(format!("{func} allocates workspace of computed size and metadata records none for it"))
        });
    }
    let meta = desc.memory.operator_workspace.iter().find(|(n, _)| n == func).map(|(_, b)| *b).unwrap_or(0);
    Ok(meta + if meta > 0 { alignment_slack(align, ALLOCATIONS_WITHOUT_C) } else { 0 })
}

/// Live allocations assumed for an operator whose C is not available (LLVM objects), to size the
/// alignment slack added to its metadata workspace figure.
const ALLOCATIONS_WITHOUT_C: u64 = 8;

/// A set of entries that share one place.
struct Buffer {
    entries: Vec<usize>,
    size: u64,
    first: usize,
    last: usize,
    /// Used in place from an input or parameter.
    external: Option<ArgBinding>,
    /// In the arena, but filled from an input or parameter before the first call.
    copy_in: Option<ArgBinding>,
}

/// Plans a graph model.
///
/// Inputs are used in place, except with LLVM objects, whose kernels assume 64-byte-aligned
/// data: then inputs are copied into the arena. Three layouts are computed and the smallest is used: alias classes packed by liveness
/// (entries joined by `__nop` share a place; nothing else has to), storage ids packed by
/// liveness, and TVM's own layout (one buffer per storage id, one shared scratch region).
pub fn plan(desc: &ModelDesc, exec: &GraphExec, align: u64) -> Result<GraphPlan> {
    let GraphExec { graph, bindings, .. } = exec;
    let n_nodes = graph.nodes.len();
    let n_entries = graph.num_entries();
    let end_step = n_nodes; // outputs stay live until after the last call
    let inputs_in_place = desc.code.objects.is_empty();

    // Root of each entry: follow `__nop` aliases back to the entry that owns the storage.
    let mut root: Vec<usize> = (0..n_entries).collect();
    let mut written_by_call = vec![false; n_entries];
    let mut arg_of: Vec<Option<ArgBinding>> = vec![None; n_entries];
    for (nid, node) in graph.nodes.iter().enumerate() {
        let first = graph.node_row_ptr[nid];
        match &node.op {
            NodeOp::Nop => root[first] = root[graph.eid(node.inputs[0])],
            NodeOp::Call { .. } => (first..first + node.num_outputs).for_each(|e| written_by_call[e] = true),
            NodeOp::Null => arg_of[first] = bindings.get(&nid).copied(),
        }
    }
    // When each entry is used: (first step, last step).
    let mut span: Vec<Option<(usize, usize)>> = vec![None; n_entries];
    let mut touch = |e: usize, step: usize| {
        span[e] = Some(match span[e] {
            None => (step, step),
            Some((a, b)) => (a.min(step), b.max(step)),
        });
    };
    let mut calls = Vec::new();
    let mut scratch = Vec::new();
    for (nid, node) in graph.nodes.iter().enumerate() {
        if let NodeOp::Call { func_name, .. } = &node.op {
            let first = graph.node_row_ptr[nid];
            let mut args: Vec<usize> = node.inputs.iter().map(|r| graph.eid(*r)).collect();
            args.extend(first..first + node.num_outputs);
            for &e in &args {
                touch(e, nid);
            }
            let ws = operator_scratch(desc, func_name, align)?;
            scratch.push(Interval { size: ws, first: nid, last: nid });
            calls.push(OpCall { node: nid, func: func_name.clone(), args, scratch: (0, ws) });
        }
    }
    for h in &graph.heads {
        touch(graph.eid(*h), end_step);
    }

    // Partition the used entries into buffers by a key (alias class or storage id).
    let partition = |key: &dyn Fn(usize) -> usize| -> Vec<Buffer> {
        let mut by_key: std::collections::BTreeMap<usize, Buffer> = std::collections::BTreeMap::new();
        for (e, sp) in span.iter().enumerate() {
            let Some((a, b)) = *sp else { continue };
            let buf = by_key.entry(key(e)).or_insert(Buffer {
                entries: Vec::new(),
                size: 0,
                first: a,
                last: b,
                external: None,
                copy_in: None,
            });
            buf.entries.push(e);
            buf.size = buf.size.max(graph.entry_bytes(e));
            buf.first = buf.first.min(a);
            buf.last = buf.last.max(b);
        }
        let mut out: Vec<Buffer> = by_key.into_values().collect();
        for b in &mut out {
            let arg = b.entries.iter().find_map(|&e| arg_of[root[e]]);
            let written = b.entries.iter().any(|&e| written_by_call[e]);
            match (arg, written) {
                (Some(a @ ArgBinding::Input(_)), false) if !inputs_in_place => {
                    b.copy_in = Some(a);
                    b.first = 0;
                }
                (Some(a), false) => b.external = Some(a),
                (Some(a), true) => {
                    b.copy_in = Some(a);
                    b.first = 0;
                }
                (None, _) => {}
            }
        }
        out
    };
    let classes = partition(&|e| root[e]);
    let sids = partition(&|e| graph.storage_id[e]);

    // Outputs that are inputs or parameters get their own arena copy at the end.
    let head_external = |bufs: &[Buffer], e: usize| bufs.iter().any(|b| b.external.is_some() && b.entries.contains(&e));

    // What a partition places in the arena: its arena buffers, every operator's scratch, then
    // the arena copies of outputs that are inputs or parameters.
    let items_of = |bufs: &[Buffer]| -> Vec<Interval> {
        let mut items: Vec<Interval> = bufs
            .iter()
            .filter(|b| b.external.is_none())
            .map(|b| Interval { size: b.size, first: b.first, last: b.last })
            .collect();
        items.extend(scratch.iter().copied());
        items.extend(graph.heads.iter().map(|h| graph.eid(*h)).filter(|&e| head_external(bufs, e)).map(|e| Interval {
            size: graph.entry_bytes(e),
            first: end_step,
            last: end_step,
        }));
        items
    };
    let n_scratch = scratch.len();
    let arena_count = |bufs: &[Buffer]| bufs.iter().filter(|b| b.external.is_none()).count();
    // Buffers with disjoint lifetimes share bytes.
    let liveness = |items: &[Interval]| pack::pack(items, align);
    // One place per buffer, one scratch region shared by every operator, then the copies.
    let sequential = |items: &[Interval], n_arena: usize| -> (Vec<u64>, u64) {
        let (bufs, rest) = items.split_at(n_arena);
        let (scratch, extra) = rest.split_at(n_scratch);
        let mut cursor = 0;
        let mut offsets = Vec::with_capacity(items.len());
        for b in bufs {
            offsets.push(cursor);
            cursor += align_up(b.size, align);
        }
        offsets.extend(std::iter::repeat_n(cursor, scratch.len()));
        cursor += scratch.iter().map(|i| align_up(i.size, align)).max().unwrap_or(0);
        for x in extra {
            offsets.push(cursor);
            cursor += align_up(x.size, align);
        }
        (offsets, cursor)
    };
    let (class_items, sid_items) = (items_of(&classes), items_of(&sids));
    let candidates = [
        ("liveness", &classes, &class_items, liveness(&class_items)),
        ("liveness by storage id", &sids, &sid_items, liveness(&sid_items)),
        ("storage-id", &sids, &sid_items, sequential(&sid_items, arena_count(&sids))),
    ];
    let storage_id_layout_bytes = candidates[2].3.1;
    let (layout, bufs, items, (offsets, total)) =
        candidates.into_iter().min_by_key(|c| c.3.1).expect("three candidates");
    if !pack::verify(items, &offsets, total) {
        return Err(Error::invalid("internal error: the memory plan overlaps live buffers"));
    }
    // The offsets of the arena buffers, the scratch windows and the output copies.
    let (bufs_offsets, rest) = offsets.split_at(arena_count(bufs));
    let (scratch_offsets, extra_offsets) = rest.split_at(n_scratch);

    // Slots.
    let slot_of_arg = |a: ArgBinding, e: usize| -> Slot {
        match a {
            ArgBinding::Input(index) => Slot::Input { index },
            ArgBinding::Param(index) => match desc.params[index].linked {
                Some(_) => Slot::Linked { index, sid: graph.storage_id[e] },
                None => Slot::Param { index },
            },
        }
    };
    let mut slots = vec![Slot::Unused; n_entries];
    let mut copies_in = Vec::new();
    let mut arena_k = 0;
    for b in bufs.iter() {
        match b.external {
            Some(a) => {
                for &e in &b.entries {
                    slots[e] = slot_of_arg(a, root[e]);
                }
            }
            None => {
                let offset = bufs_offsets[arena_k];
                arena_k += 1;
                for &e in &b.entries {
                    slots[e] = Slot::Arena { offset };
                }
                if let Some(a) = b.copy_in {
                    let src = b.entries.iter().copied().find(|&e| arg_of[root[e]].is_some()).unwrap_or(b.entries[0]);
                    copies_in.push(CopyIn { from: slot_of_arg(a, src), offset, bytes: graph.entry_bytes(src) });
                }
            }
        }
    }
    for (c, &off) in calls.iter_mut().zip(scratch_offsets) {
        c.scratch.0 = off;
    }
    let mut extra_k = 0;
    let mut outputs = Vec::new();
    for h in &graph.heads {
        let e = graph.eid(*h);
        if head_external(bufs, e) {
            outputs.push(OutputPlace { eid: e, offset: extra_offsets[extra_k], copy_from: Some(slots[e]) });
            extra_k += 1;
        } else {
            let Slot::Arena { offset } = slots[e] else {
                return Err(Error::invalid("internal error: an output has no place"));
            };
            outputs.push(OutputPlace { eid: e, offset, copy_from: None });
        }
    }

    // TVM's figures: one buffer per storage id.
    let mut tvm = TvmPlan::default();
    let n_sids = graph.storage_id.iter().copied().max().map_or(0, |m| m + 1);
    let mut sid_bytes = vec![0u64; n_sids];
    let mut sid_arg: Vec<Option<ArgBinding>> = vec![None; n_sids];
    for e in 0..n_entries {
        let s = graph.storage_id[e];
        sid_bytes[s] = sid_bytes[s].max(graph.entry_bytes(e));
        if sid_arg[s].is_none() {
            sid_arg[s] = arg_of[root[e]];
        }
    }
    for s in 0..n_sids {
        let b = align_up(sid_bytes[s], 4);
        tvm.storage_bytes += b;
        match sid_arg[s] {
            Some(ArgBinding::Param(_)) => tvm.param_bytes += b,
            Some(ArgBinding::Input(_)) => tvm.input_bytes += b,
            None => tvm.activation_bytes += b,
        }
    }
    tvm.workspace_bytes = desc.memory.operator_workspace.iter().map(|(_, b)| *b).max().unwrap_or(0);

    let mut buffers = Vec::new();
    for (arena_k, b) in bufs.iter().filter(|b| b.external.is_none()).enumerate() {
        let sids: std::collections::BTreeSet<usize> = b.entries.iter().map(|&e| graph.storage_id[e]).collect();
        buffers.push(PlacedBuffer {
            label: format!("entries {:?} (storage {:?})", b.entries, sids),
            offset: bufs_offsets[arena_k],
            size: b.size,
            first: b.first,
            last: b.last,
            scratch: false,
        });
    }
    for (k, iv) in scratch.iter().enumerate() {
        if iv.size > 0 {
            buffers.push(PlacedBuffer {
                label: format!("scratch of call {k} ({})", calls[k].func),
                offset: scratch_offsets[k],
                size: iv.size,
                first: iv.first,
                last: iv.last,
                scratch: true,
            });
        }
    }
    Ok(GraphPlan {
        align,
        slots,
        calls,
        copies_in,
        outputs,
        arena_bytes: total,
        layout,
        storage_id_layout_bytes,
        tvm,
        buffers,
    })
}
