//! The static memory plan of a graph-executor model.
//!
//! Every graph entry gets a place: the caller's input (used in place), a parameter (used in
//! place, in flash), a linked parameter (in the C's read-only data), or an offset in one arena.
//! Storage ids whose lifetimes do not overlap share bytes; each operator's scratch memory
//! (`TVMBackendAllocWorkspace`) is one more buffer, live only during that operator. `__nop`
//! entries alias their input. TVM's own plan (one buffer per storage id) is computed beside it.

mod in_place;
mod layout;
mod types;
mod usage;

use crate::error::Result;
use crate::model::{GraphExec, ModelDesc};
use usage::Usage;

pub use types::{CopyIn, GraphPlan, InPlace, OpCall, OutputPlace, PlacedBuffer, Slot, TvmPlan};
pub use usage::operator_scratch;

/// Plans a graph model.
///
/// An operator's output takes the bytes of an input that dies at that operator where its
/// kernel's C proves it safe ([`ModelDesc::without_in_place`] turns it off), so the arena may be
/// below [`GraphPlan::tensor_bound`].
///
/// Inputs are used in place, except with LLVM objects, whose kernels assume 64-byte-aligned
/// data: then inputs are copied into the arena. Four layouts are computed and the smallest is
/// used: alias classes packed by liveness (entries joined by `__nop` share a place; nothing else
/// has to), the same with in-place operators, storage ids packed by liveness, and TVM's own
/// layout (one buffer per storage id, one shared scratch region).
pub fn plan(desc: &ModelDesc, exec: &GraphExec, align: u64) -> Result<GraphPlan> {
    let graph = &exec.graph;
    let mut usage = Usage::of(desc, exec, align)?;
    let inputs_in_place = desc.code.objects.is_empty();
    let classes = usage.partition(graph, &|e| usage.root[e], inputs_in_place);
    let tensor_bound = crate::plan::pack::live_bound(&layout::items_of(graph, &usage, &classes), align);
    let (in_place_classes, in_place) = in_place::join(desc, graph, &usage, classes.clone());
    let sids = usage.partition(graph, &|e| graph.storage_id[e], inputs_in_place);
    let chosen = layout::choose(graph, &usage, &classes, &in_place_classes, &sids, align)?;
    let in_place = if chosen.name == layout::IN_PLACE { in_place } else { Vec::new() };
    let placed = layout::place(desc, graph, &mut usage, &chosen)?;
    let buffers = layout::placed_buffers(graph, &usage, &chosen);
    let tvm = layout::tvm_plan(desc, graph, &usage);
    Ok(GraphPlan {
        align,
        slots: placed.slots,
        calls: usage.calls,
        copies_in: placed.copies_in,
        outputs: placed.outputs,
        arena_bytes: chosen.total,
        layout: chosen.name,
        storage_id_layout_bytes: chosen.storage_id_layout_bytes,
        tvm,
        buffers,
        tensor_bound,
        in_place,
    })
}
