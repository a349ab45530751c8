//! The graph executor config (`graph.json`, later `<m>.graph`).
//!
//! Attribute arrays are indexed by *entry* id (`node_row_ptr[nid] + output_index`). Every
//! reference, length and count is validated here, so later stages can index without checks.

use super::json::{self, J};
use crate::error::{Error, Result};
use crate::model::{EntryRef, Graph, Node, NodeOp};
use crate::read::params::ParamTensor;
use crate::support::dtype::{self, DType};

/// Most nodes a graph may have (16,384: TVM's fused graphs of the largest vision models have a
/// few hundred; the memory planner's work grows with the square of the buffers).
pub const MAX_NODES: usize = 1 << 14;
/// Most entries (node outputs) a graph may have.
pub const MAX_ENTRIES: usize = 1 << 15;
/// Most dimensions a tensor may have.
pub const MAX_NDIM: usize = 32;

/// The graph's arg nodes bound to stored parameters ([`Graph::split_args`]).
#[derive(Clone, Debug, Default)]
pub struct ArgSplit {
    /// Arg nodes that are inputs (node ids), in `arg_nodes` order.
    pub inputs: Vec<usize>,
    /// Arg nodes that are parameters: node id and index in the parameter list, in `arg_nodes` order.
    pub params: Vec<(usize, usize)>,
    /// Parameters whose dtype or shape differs from the graph's, in `arg_nodes` order.
    pub mismatches: Vec<ParamMismatch>,
    /// Names of the parameters no arg node names, in stored order.
    pub unused: Vec<String>,
}

/// A parameter stored with another dtype or shape than the graph gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamMismatch {
    /// The parameter's name.
    pub name: String,
    /// Its dtype and shape where it is stored.
    pub stored: (DType, Vec<u64>),
    /// Its dtype and shape in the graph.
    pub graph: (DType, Vec<u64>),
}

impl ParamMismatch {
    /// `parameter p0 is float32 [2] in {place} but float32 [3] in the graph`.
    pub fn message(&self, place: &str) -> String {
        let ((sd, ss), (gd, gs)) = (&self.stored, &self.graph);
        format!("parameter {} is {sd} {ss:?} in {place} but {gd} {gs:?} in the graph", self.name)
    }
}

/// A message for a parameter no arg node names.
pub fn unused_param(name: &str) -> String {
    format!("parameter {name} is not used by the graph")
}

/// TVM's names for a graph's outputs when nothing records them: `output` for one, else
/// `output0`, `output1`, ….
pub fn default_output_names(n: usize) -> Vec<String> {
    if n == 1 { vec!["output".to_string()] } else { (0..n).map(|i| format!("output{i}")).collect() }
}

impl Graph {
    /// Parses and validates graph JSON.
    pub fn parse(text: &[u8]) -> Result<Graph> {
        let value = json::parse(text)?;
        let root = J::root(&value);
        let nodes_j = root.get("nodes")?.array()?;
        if nodes_j.len() > MAX_NODES {
            return Err(root.get("nodes")?.err(format!("{} nodes, more than the limit {MAX_NODES}", nodes_j.len())));
        }
        // node_row_ptr first: it gives the number of outputs of every node.
        let node_row_ptr = row_ptr(&root, nodes_j.len())?;
        let num_entries = node_row_ptr[nodes_j.len()];
        let mut nodes = Vec::with_capacity(nodes_j.len());
        for (nid, nj) in nodes_j.iter().enumerate() {
            nodes.push(node(nj, nid, &node_row_ptr)?);
        }
        let args_j = root.get("arg_nodes")?;
        let args_v = args_j.v.as_array().ok_or_else(|| args_j.err("expected an array"))?;
        if args_v.len() > nodes.len() {
            return Err(args_j.err(format!("{} arg nodes, more than the {} nodes", args_v.len(), nodes.len())));
        }
        let mut is_arg = vec![false; nodes.len()];
        let arg_nodes = args_j
            .array()?
            .iter()
            .map(|a| {
                let n = a.index(nodes.len())?;
                if nodes[n].op != NodeOp::Null {
                    return Err(a.err(format!("arg node {n} is not a null node")));
                }
                if std::mem::replace(&mut is_arg[n], true) {
                    return Err(a.err(format!("node {n} is listed twice")));
                }
                Ok(n)
            })
            .collect::<Result<Vec<_>>>()?;
        let heads =
            root.get("heads")?.array()?.iter().map(|h| entry_ref(h, &node_row_ptr)).collect::<Result<Vec<_>>>()?;
        if heads.is_empty() {
            return Err(root.get("heads")?.err("the graph has no outputs"));
        }
        let (dltype, storage_id, shape) = entry_attrs(&root.get("attrs")?, num_entries)?;
        let g = Graph { nodes, arg_nodes, heads, node_row_ptr, dltype, storage_id, shape };
        g.check_aliases()?;
        Ok(g)
    }

    /// Splits the arg nodes into inputs and parameters: an arg node is a parameter when
    /// `params` has its name. Also reports parameters whose dtype or shape differ from the
    /// graph's and parameters no arg node names.
    pub fn split_args(&self, params: &[ParamTensor]) -> ArgSplit {
        let mut bound = ArgSplit::default();
        let mut used = vec![false; params.len()];
        // Name → the first parameter of that name (a map: graphs have 10^5 arguments).
        let mut by_name: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, p) in params.iter().enumerate().rev() {
            by_name.insert(p.name.as_str(), i);
        }
        for &node in &self.arg_nodes {
            let name = self.nodes[node].name.as_str();
            let Some(&param) = by_name.get(name) else {
                bound.inputs.push(node);
                continue;
            };
            let (p, eid) = (&params[param], self.node_row_ptr[node]);
            if p.dtype != self.dltype[eid] || p.shape != self.shape[eid] {
                bound.mismatches.push(ParamMismatch {
                    name: p.name.clone(),
                    stored: (p.dtype, p.shape.clone()),
                    graph: (self.dltype[eid], self.shape[eid].clone()),
                });
            }
            used[param] = true;
            bound.params.push((node, param));
        }
        bound.unused = params.iter().zip(used).filter(|(_, u)| !u).map(|(p, _)| p.name.clone()).collect();
        bound
    }

    fn check_aliases(&self) -> Result<()> {
        for (nid, node) in self.nodes.iter().enumerate() {
            if node.op == NodeOp::Nop {
                let (Some(input), 1) = (node.inputs.first(), node.num_outputs) else {
                    return Err(Error::invalid(format!("__nop node {nid} must have one input and one output"))
                        .at(format!("nodes[{nid}]")));
                };
                let out = self.node_row_ptr[nid];
                let inp = self.eid(*input);
                if self.storage_id[out] != self.storage_id[inp] {
                    return Err(Error::invalid(format!(
                        "__nop node {nid} does not share storage with its input (storage ids {} and {})",
                        self.storage_id[out], self.storage_id[inp]
                    ))
                    .at(format!("nodes[{nid}]")));
                }
                if self.entry_bytes(out) > self.entry_bytes(inp) {
                    return Err(Error::invalid(format!("__nop node {nid} is larger than its input"))
                        .at(format!("nodes[{nid}]")));
                }
            }
        }
        Ok(())
    }
}

/// `node_row_ptr`: `nodes + 1` non-decreasing entry offsets from 0.
fn row_ptr(root: &J<'_>, n_nodes: usize) -> Result<Vec<usize>> {
    let rp_j = root.get("node_row_ptr")?;
    let rp_items = rp_j.array()?;
    if rp_items.len() != n_nodes + 1 {
        return Err(rp_j.err(format!("has {} items, expected nodes + 1 = {}", rp_items.len(), n_nodes + 1)));
    }
    let mut node_row_ptr = Vec::with_capacity(rp_items.len());
    for (i, item) in rp_items.iter().enumerate() {
        let v = item.u64()? as usize;
        if i == 0 && v != 0 {
            return Err(item.err("must start at 0"));
        }
        if i > 0 && v < node_row_ptr[i - 1] {
            return Err(item.err("node_row_ptr must not decrease"));
        }
        if v > MAX_ENTRIES {
            return Err(item.err(format!("{v} entries, more than the limit {MAX_ENTRIES}")));
        }
        node_row_ptr.push(v);
    }
    Ok(node_row_ptr)
}

/// A reference `[node_id, output_index(, version)]` to an existing output.
fn entry_ref(j: &J<'_>, node_row_ptr: &[usize]) -> Result<EntryRef> {
    let parts = j.array()?;
    if !(2..=3).contains(&parts.len()) {
        return Err(j.err("expected [node_id, output_index(, version)]"));
    }
    let node = parts[0].index(node_row_ptr.len() - 1)?;
    let outs = node_row_ptr[node + 1] - node_row_ptr[node];
    let index = parts[1].index(outs.max(1))?;
    if index >= outs {
        return Err(parts[1].err(format!("node {node} has {outs} outputs")));
    }
    Ok(EntryRef { node, index })
}

/// Node `nid`: its inputs (each an earlier node's output) and what it does.
fn node(nj: &J<'_>, nid: usize, node_row_ptr: &[usize]) -> Result<Node> {
    let name = nj.get("name")?.str()?.to_string();
    let op_str = nj.get("op")?.str()?;
    let mut inputs = Vec::new();
    if let Some(ins) = nj.opt("inputs")? {
        for i in ins.array()? {
            let r = entry_ref(&i, node_row_ptr)?;
            if r.node >= nid {
                return Err(i.err(format!("input refers to node {} which does not come before node {nid}", r.node)));
            }
            inputs.push(r);
        }
    }
    let num_outputs = node_row_ptr[nid + 1] - node_row_ptr[nid];
    let op = match op_str {
        "null" => {
            if !inputs.is_empty() {
                return Err(nj.get("inputs")?.err("a null node has no inputs"));
            }
            if num_outputs != 1 {
                return Err(nj.err(format!("a null node has exactly one output, node_row_ptr gives {num_outputs}")));
            }
            NodeOp::Null
        }
        "tvm_op" => tvm_op(&nj.get("attrs")?, inputs.len(), num_outputs)?,
        other => {
            return Err(nj.get("op")?.err(format!("unknown op {other:?} (expected \"null\" or \"tvm_op\")")));
        }
    };
    Ok(Node { name, op, inputs, num_outputs })
}

/// What a `tvm_op` node with `inputs` inputs and `num_outputs` outputs calls, from its attrs.
fn tvm_op(attrs: &J<'_>, inputs: usize, num_outputs: usize) -> Result<NodeOp> {
    let func_name = attrs.get("func_name")?.str()?.to_string();
    let num_str = |key: &str| -> Result<Option<usize>> {
        let Some(v) = attrs.opt(key)? else { return Ok(None) };
        // Attr values are strings ("2"); accept numbers too.
        let n = match v.v.as_str() {
            Some(s) => s.parse::<usize>().map_err(|_| v.err(format!("{s:?} is not a count")))?,
            None => v.u64()? as usize,
        };
        Ok(Some(n))
    };
    if let Some(n) = num_str("num_inputs")? {
        if n != inputs {
            return Err(attrs.get("num_inputs")?.err(format!("says {n} but the node has {inputs} inputs")));
        }
    }
    if let Some(n) = num_str("num_outputs")? {
        if n != num_outputs {
            return Err(attrs.get("num_outputs")?.err(format!("says {n} but node_row_ptr gives {num_outputs}")));
        }
    }
    let flatten_data = num_str("flatten_data")?.unwrap_or(0) != 0;
    match func_name.as_str() {
        "__nop" => Ok(NodeOp::Nop),
        "__copy" => Err(attrs
            .get("func_name")?
            .err("__copy (a cross-device copy) cannot occur in a CPU-only model; this graph needs several devices")),
        "" => Err(attrs.get("func_name")?.err("empty function name")),
        _ => Ok(NodeOp::Call { func_name, flatten_data }),
    }
}

/// Every entry's dtype, storage id and shape.
type EntryAttrs = (Vec<DType>, Vec<usize>, Vec<Vec<u64>>);

/// The per-entry attributes: dtype, storage id and shape (and checks of the storage scope and
/// device of every entry).
fn entry_attrs(attrs: &J<'_>, num_entries: usize) -> Result<EntryAttrs> {
    let typed = |key: &str, tag: &str| -> Result<Vec<J<'_>>> {
        let a = attrs.get(key)?;
        let pair = a.array()?;
        if pair.len() != 2 {
            return Err(a.err("expected [type_tag, values]"));
        }
        let t = pair[0].str()?;
        if t != tag {
            return Err(pair[0].err(format!("type tag {t:?}, expected {tag:?}")));
        }
        let values = pair[1].array()?;
        if values.len() != num_entries {
            return Err(pair[1].err(format!("{} values, expected one per entry ({num_entries})", values.len())));
        }
        Ok(values)
    };
    let dltype = typed("dltype", "list_str")?
        .iter()
        .map(|d| DType::parse(d.str()?).map_err(|e| d.err(e.kind.to_string())))
        .collect::<Result<Vec<_>>>()?;
    let storage_id =
        typed("storage_id", "list_int")?.iter().map(|s| s.index(num_entries.max(1))).collect::<Result<Vec<_>>>()?;
    let mut shape = Vec::with_capacity(num_entries);
    for (s, &dt) in typed("shape", "list_shape")?.iter().zip(&dltype) {
        let dims = s.array()?;
        if dims.len() > MAX_NDIM {
            return Err(s.err(format!("{} dimensions, more than {MAX_NDIM}", dims.len())));
        }
        let dims = dims.iter().map(|d| d.u64()).collect::<Result<Vec<_>>>()?;
        if dims.contains(&0) {
            return Err(
                s.err(format!("shape {dims:?} has no elements; a zero-sized tensor cannot be passed or planned"))
            );
        }
        if dtype::tensor_bytes(dt, &dims).is_err() {
            return Err(s.err(format!("a {dt} tensor of shape {dims:?} has more bytes than a 64-bit size holds")));
        }
        shape.push(dims);
    }
    if attrs.opt("storage_scope")?.is_some() {
        for v in typed("storage_scope", "list_str")? {
            let s = v.str()?;
            if !s.is_empty() && s != "global" {
                return Err(v.err(format!("storage scope {s:?} is not supported (only \"global\")")));
            }
        }
    }
    if attrs.has("device_index") {
        for v in typed("device_index", "list_int")? {
            if v.i64()? != 1 {
                return Err(v.err("only CPU (device 1) entries are supported"));
            }
        }
    }
    Ok((dltype, storage_id, shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::bytes::Bytes;

    const GRAPH: &str = r#"{"nodes":[{"op":"null","name":"x","inputs":[]},{"op":"null","name":"p0","inputs":[]},
        {"op":"tvm_op","name":"f","inputs":[[0,0,0],[1,0,0]],"attrs":{"func_name":"f","flatten_data":"0","num_inputs":"2","num_outputs":"1"}}],
        "arg_nodes":[0,1],"heads":[[2,0,0]],"node_row_ptr":[0,1,2,3],
        "attrs":{"dltype":["list_str",["float32","float32","float32"]],"storage_id":["list_int",[0,1,2]],"shape":["list_shape",[[2],[2],[2]]]}}"#;

    fn param(name: &str, shape: &[u64]) -> ParamTensor {
        let bytes = shape.iter().product::<u64>() as usize * 4;
        ParamTensor { name: name.into(), dtype: DType::F32, shape: shape.to_vec(), data: Bytes::new(vec![0; bytes]) }
    }

    #[test]
    fn arg_nodes_split_into_inputs_and_params() {
        let g = Graph::parse(GRAPH.as_bytes()).unwrap();
        let split = g.split_args(&[param("unused", &[1]), param("p0", &[3])]);
        assert_eq!(split.inputs, vec![0]);
        assert_eq!(split.params, vec![(1, 1)]);
        assert_eq!(split.unused, vec!["unused"]);
        assert_eq!(
            split.mismatches[0].message("the factory"),
            "parameter p0 is float32 [3] in the factory but float32 [2] in the graph"
        );
        assert_eq!(unused_param("unused"), "parameter unused is not used by the graph");
        assert!(g.split_args(&[param("p0", &[2])]).mismatches.is_empty());
        assert_eq!(default_output_names(1), ["output"]);
        assert_eq!(default_output_names(2), ["output0", "output1"]);
    }
}
