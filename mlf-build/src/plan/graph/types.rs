//! A graph model's plan: where every entry lives, the calls with their scratch windows, the
//! copies, the outputs, and TVM's own figures.

use serde::Serialize;

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
    /// Which layout was chosen, the smallest of four (the first of equals): `liveness` (alias
    /// classes with disjoint lifetimes share bytes), `liveness, in place` (the same, with
    /// in-place operators' outputs on their dying inputs), `liveness by storage id` (TVM's
    /// storage ids packed the same way) or `storage-id` (TVM's layout: one buffer per storage
    /// id, one shared scratch region).
    pub layout: &'static str,
    /// Arena bytes of the storage-id layout, for comparison.
    pub storage_id_layout_bytes: u64,
    /// TVM's own figures.
    pub tvm: TvmPlan,
    /// Placed buffers (for pictures): storage id (or `None` for scratch), offset, size, first
    /// and last step.
    pub buffers: Vec<PlacedBuffer>,
    /// The liveness bound at tensor granularity: the most bytes (each aligned) of alias classes
    /// and scratch live at one step when no output shares bytes with an input. Without in-place
    /// operators no layout needs less; with them the arena may be below it.
    pub tensor_bound: u64,
    /// The operators whose output took the bytes of an input dying there (proven from their C).
    pub in_place: Vec<InPlace>,
}

/// A placed arena buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlacedBuffer {
    /// Short name: the tensor (the operator that writes it, or the input's name) or
    /// `scratch of <operator>`.
    pub name: String,
    /// What it is, in words (for tooltips).
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

/// An input whose bytes an operator's output may take (an in-place operator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct InPlace {
    /// Graph node of the operator.
    pub node: usize,
    /// The input's entry.
    pub input: usize,
    /// The output's entry.
    pub output: usize,
}
