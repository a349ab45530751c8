//! How a graph uses its entries: which entry owns the storage of each (following `__nop`
//! aliases), which are written by a call or bound to an input or parameter, when each is live,
//! the calls with their scratch memory, and the entries grouped into buffers that share a place.

use super::types::OpCall;
use crate::error::{Error, Result};
use crate::model::{ArgBinding, Graph, GraphExec, ModelDesc, NodeOp};
use crate::plan::pack::{Interval, alignment_slack};

/// Scratch bytes operator function `func` needs from `TVMBackendAllocWorkspace` with allocations
/// aligned to `align`: the sum of its constant allocations as read from its C (an upper bound
/// of its peak), or, when the C is not available or sizes are computed, the metadata figure
/// plus alignment slack.
pub fn operator_scratch(desc: &ModelDesc, func: &str, align: u64) -> Result<u64> {
    Functions::of(desc).scratch(func, align)
}

/// The model's C function definitions and metadata workspace figures by name, looked up once
/// per operator call (a graph may call 10^5 functions: no linear search per call).
pub struct Functions<'a> {
    defined: std::collections::HashMap<&'a str, &'a crate::model::CFunction>,
    workspace: std::collections::HashMap<&'a str, u64>,
}

impl<'a> Functions<'a> {
    /// The index of `desc`'s C (the first definition of a name, the first metadata figure).
    pub fn of(desc: &'a ModelDesc) -> Functions<'a> {
        let mut defined = std::collections::HashMap::new();
        for f in desc.code.sources.iter().flat_map(|s| &s.scan.functions).filter(|f| f.defined) {
            defined.entry(f.name.as_str()).or_insert(f);
        }
        let mut workspace = std::collections::HashMap::new();
        for (n, b) in &desc.memory.operator_workspace {
            workspace.entry(n.as_str()).or_insert(*b);
        }
        Functions { defined, workspace }
    }

    /// [`operator_scratch`] through the index.
    pub fn scratch(&self, func: &str, align: u64) -> Result<u64> {
        scratch_of(self.defined.get(func).copied(), self.workspace.get(func).copied(), func, align)
    }
}

fn scratch_of(def: Option<&crate::model::CFunction>, meta: Option<u64>, func: &str, align: u64) -> Result<u64> {
    if let Some(f) = def {
        if let Some(n) = f.workspace_upper_bound(align) {
            return Ok(n);
        }
        return meta.map(|m| m.saturating_add(alignment_slack(align, f.workspace_allocs.len() as u64))).ok_or_else(
            || {
                Error::unsupported(format!(
                    "{func} allocates workspace of computed size and metadata records none for it"
                ))
            },
        );
    }
    let meta = meta.unwrap_or(0);
    Ok(meta.saturating_add(if meta > 0 { alignment_slack(align, ALLOCATIONS_WITHOUT_C) } else { 0 }))
}

/// Live allocations assumed for an operator whose C is not available (LLVM objects), to size the
/// alignment slack added to its metadata workspace figure.
const ALLOCATIONS_WITHOUT_C: u64 = 8;

/// How a graph uses its entries (indexed by entry id).
pub(super) struct Usage {
    /// The entry that owns each entry's storage (itself, or what a `__nop` aliases).
    pub(super) root: Vec<usize>,
    /// Whether a call writes the entry.
    pub(super) written_by_call: Vec<bool>,
    /// The input or parameter an argument node's entry is bound to.
    pub(super) arg_of: Vec<Option<ArgBinding>>,
    /// When each entry is used: (first step, last step); `None` when never.
    pub(super) span: Vec<Option<(usize, usize)>>,
    /// The calls in order (scratch windows at offset 0 until placed).
    pub(super) calls: Vec<OpCall>,
    /// Each call's scratch memory as a buffer live during its call.
    pub(super) scratch: Vec<Interval>,
    /// The step after the last call, until which outputs stay live.
    pub(super) end_step: usize,
}

/// A set of entries that share one place.
#[derive(Clone)]
pub(super) struct Buffer {
    pub(super) entries: Vec<usize>,
    pub(super) size: u64,
    pub(super) first: usize,
    pub(super) last: usize,
    /// Used in place from an input or parameter.
    pub(super) external: Option<ArgBinding>,
    /// In the arena, but filled from an input or parameter before the first call.
    pub(super) copy_in: Option<ArgBinding>,
    /// Its last call reads it before writing the outputs that may overwrite it (an in-place
    /// operator), so it is dead in the second half of that call.
    pub(super) ends_early: bool,
    /// Its first call writes it after reading the inputs it may overwrite, so it is live only in
    /// the second half of that call.
    pub(super) starts_late: bool,
}

impl Buffer {
    /// Its lifetime in half steps (`2 × step` and `2 × step + 1`, the first and second half of a
    /// call), for the packer: an in-place operator's dying input ends before the output that
    /// overwrites it starts.
    pub(super) fn half_steps(&self) -> (usize, usize) {
        let first = self.first.saturating_mul(2).saturating_add(usize::from(self.starts_late));
        let last = self.last.saturating_mul(2).saturating_add(usize::from(!self.ends_early));
        (first, last.max(first))
    }
}

impl Usage {
    /// The usage of `exec`'s graph, with scratch memory aligned to `align`.
    pub(super) fn of(desc: &ModelDesc, exec: &GraphExec, align: u64) -> Result<Usage> {
        let GraphExec { graph, bindings, .. } = exec;
        let n_entries = graph.num_entries();
        // Root of each entry: follow `__nop` aliases back to the entry that owns the storage.
        let mut u = Usage {
            root: (0..n_entries).collect(),
            written_by_call: vec![false; n_entries],
            arg_of: vec![None; n_entries],
            span: vec![None; n_entries],
            calls: Vec::new(),
            scratch: Vec::new(),
            end_step: graph.nodes.len(),
        };
        for (nid, node) in graph.nodes.iter().enumerate() {
            let first = graph.node_row_ptr[nid];
            match &node.op {
                NodeOp::Nop => u.root[first] = u.root[graph.eid(node.inputs[0])],
                NodeOp::Call { .. } => (first..first + node.num_outputs).for_each(|e| u.written_by_call[e] = true),
                NodeOp::Null => u.arg_of[first] = bindings.get(&nid).copied(),
            }
        }
        let functions = Functions::of(desc);
        for (nid, node) in graph.nodes.iter().enumerate() {
            if let NodeOp::Call { func_name, .. } = &node.op {
                let first = graph.node_row_ptr[nid];
                let mut args: Vec<usize> = node.inputs.iter().map(|r| graph.eid(*r)).collect();
                args.extend(first..first + node.num_outputs);
                for &e in &args {
                    u.touch(e, nid);
                }
                let ws = functions.scratch(func_name, align)?;
                u.scratch.push(Interval { size: ws, first: nid, last: nid });
                u.calls.push(OpCall { node: nid, func: func_name.clone(), args, scratch: (0, ws) });
            }
        }
        for h in &graph.heads {
            u.touch(graph.eid(*h), u.end_step);
        }
        Ok(u)
    }

    /// Records that entry `e` is used at `step`.
    fn touch(&mut self, e: usize, step: usize) {
        self.span[e] = Some(match self.span[e] {
            None => (step, step),
            Some((a, b)) => (a.min(step), b.max(step)),
        });
    }

    /// The used entries partitioned into buffers by `key` (alias class or storage id): each
    /// buffer as large as its largest entry and live from its first use to its last, used in
    /// place from an input or parameter unless the model writes it (or inputs are copied).
    pub(super) fn partition(&self, graph: &Graph, key: &dyn Fn(usize) -> usize, inputs_in_place: bool) -> Vec<Buffer> {
        let mut by_key: std::collections::BTreeMap<usize, Buffer> = std::collections::BTreeMap::new();
        for (e, sp) in self.span.iter().enumerate() {
            let Some((a, b)) = *sp else { continue };
            let buf = by_key.entry(key(e)).or_insert(Buffer {
                entries: Vec::new(),
                size: 0,
                first: a,
                last: b,
                external: None,
                copy_in: None,
                ends_early: false,
                starts_late: false,
            });
            buf.entries.push(e);
            buf.size = buf.size.max(graph.entry_bytes(e));
            buf.first = buf.first.min(a);
            buf.last = buf.last.max(b);
        }
        let mut out: Vec<Buffer> = by_key.into_values().collect();
        for b in &mut out {
            let arg = b.entries.iter().find_map(|&e| self.arg_of[self.root[e]]);
            let written = b.entries.iter().any(|&e| self.written_by_call[e]);
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
    }
}
