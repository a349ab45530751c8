//! A graph-executor model: the validated graph (nodes in execution order, entries with their
//! dtype, shape and storage id) and what every argument node is bound to.

use std::collections::BTreeMap;

use crate::support::dtype::{self, DType};

/// A graph-executor model: the validated graph and what every argument node is bound to.
#[derive(Clone, Debug)]
pub struct GraphExec {
    /// The graph.
    pub graph: Graph,
    /// For every `null` node (by node id): an input or a parameter.
    pub bindings: BTreeMap<usize, ArgBinding>,
    /// Function names that are called, each with the C signature style check done.
    pub functions: Vec<String>,
}

/// What a graph argument node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgBinding {
    /// Model input `i`.
    Input(usize),
    /// Parameter `i` of [`ModelDesc::params`](super::ModelDesc::params).
    Param(usize),
}

/// A reference to one output of a node: `[node_id, output_index, version]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryRef {
    /// Node id.
    pub node: usize,
    /// Output index of that node.
    pub index: usize,
}

/// What a node does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeOp {
    /// `op == "null"`: a graph input or a parameter.
    Null,
    /// An aliasing reshape (`func_name == "__nop"`): no call, its output shares its input's storage.
    Nop,
    /// `op == "tvm_op"`: a call of the C function `func_name`.
    Call {
        /// The C symbol.
        func_name: String,
        /// `flatten_data == "1"`: each tensor would be passed as 1-D.
        flatten_data: bool,
    },
}

/// A node.
#[derive(Clone, Debug)]
pub struct Node {
    /// `name`.
    pub name: String,
    /// What it does.
    pub op: NodeOp,
    /// Its inputs.
    pub inputs: Vec<EntryRef>,
    /// Number of outputs (entries) it owns.
    pub num_outputs: usize,
}

/// A validated graph.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Nodes in execution order.
    pub nodes: Vec<Node>,
    /// `arg_nodes`: every `null` node (inputs and parameters).
    pub arg_nodes: Vec<usize>,
    /// `heads`: the outputs, in order.
    pub heads: Vec<EntryRef>,
    /// `node_row_ptr` (`nodes.len() + 1` items).
    pub node_row_ptr: Vec<usize>,
    /// Per entry: dtype.
    pub dltype: Vec<DType>,
    /// Per entry: storage id.
    pub storage_id: Vec<usize>,
    /// Per entry: shape.
    pub shape: Vec<Vec<u64>>,
}

impl Graph {
    /// Entry id of a reference.
    pub fn eid(&self, r: EntryRef) -> usize {
        self.node_row_ptr[r.node] + r.index
    }

    /// Number of entries.
    pub fn num_entries(&self) -> usize {
        *self.node_row_ptr.last().unwrap_or(&0)
    }

    /// Bytes of an entry (`u64::MAX` if its size overflows: the graph reader refuses such
    /// entries, and every size is also checked against the build's limits before it is used).
    pub fn entry_bytes(&self, eid: usize) -> u64 {
        dtype::tensor_bytes(self.dltype[eid], &self.shape[eid]).unwrap_or(u64::MAX)
    }
}
