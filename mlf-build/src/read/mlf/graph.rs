//! A graph-executor MLF module: the graph config bound to its parameters and inputs.

use std::collections::BTreeMap;

use super::outputs::output_names;
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::read::archive::Archive;
use crate::read::graph::unused_param;
use crate::read::metadata::ModuleMeta;
use crate::read::params::ParamTensor;
use crate::read::relay::RelayMain;
use crate::support::names;

/// Reads the graph config and binds it; returns the graph config's member name.
pub(super) fn read_graph(
    archive: &Archive,
    module: &ModuleMeta,
    version: u32,
    params: Option<Vec<ParamTensor>>,
    relay: Option<&RelayMain>,
    desc: &mut ModelDesc,
) -> Result<String> {
    let m = module.name.as_str();
    let v7 = format!("executor-config/graph/{m}.graph");
    let candidates = [v7.as_str(), "executor-config/graph/graph.json", "runtime-config/graph/graph.json"];
    let (gname, gbytes) = archive.first_of(&candidates).ok_or_else(|| {
        Error::missing(format!(
            "graph config (looked for {}; metadata version {version} says the executor is graph)",
            candidates.join(", ")
        ))
    })?;
    let graph = Graph::parse(gbytes).in_member(gname)?;
    let params_name = format!("parameters/{m}.params");
    let params = params.ok_or_else(|| {
        Error::missing(format!("member {params_name} (a graph build always writes its parameters, even when empty)"))
    })?;

    // Linked parameters (TVM 0.8 `_lookup_linked_param`): storage id → C symbol.
    let mut linked: BTreeMap<u64, String> = BTreeMap::new();
    for s in &desc.code.sources {
        linked.extend(s.scan.linked_params.iter().map(|(k, v)| (*k, v.clone())));
    }

    // Bind every arg node: a parameter when `.params` has its name, else an input.
    let split = graph.split_args(&params);
    if let Some(m) = split.mismatches.first() {
        return Err(Error::mismatch(m.message(&params_name)).in_member(gname));
    }
    let mut bindings = BTreeMap::new();
    for &(nid, pi) in &split.params {
        let p = &params[pi];
        bindings.insert(nid, ArgBinding::Param(desc.params.len()));
        let sid = graph.storage_id[graph.node_row_ptr[nid]] as u64;
        desc.params.push(crate::model::ParamInfo {
            name: p.name.clone(),
            dtype: p.dtype,
            shape: p.shape.clone(),
            data: p.data.clone(),
            linked: linked.get(&sid).cloned(),
        });
    }
    let mut inputs = Vec::new();
    for &nid in &split.inputs {
        bindings.insert(nid, ArgBinding::Input(inputs.len()));
        let eid = graph.node_row_ptr[nid];
        inputs.push((graph.nodes[nid].name.clone(), graph.dltype[eid], graph.shape[eid].clone()));
    }
    for name in &split.unused {
        desc.warnings.push(format!("{params_name}: {}", unused_param(name)));
    }
    if !linked.is_empty() {
        desc.fact("parameters", "linked into the C (_lookup_linked_param); .params is a duplicate", "C source");
    }
    let raw: Vec<&str> = inputs.iter().map(|(n, ..)| n.as_str()).collect();
    let idents = names::unique_idents(&raw).at("inputs")?;
    desc.inputs = inputs
        .into_iter()
        .zip(idents)
        .map(|((name, dtype, shape), ident)| TensorInfo {
            name,
            ident,
            dtype,
            shape,
            shape_source: "graph config".into(),
            dtype_source: "graph config".into(),
        })
        .collect();

    desc.outputs = graph_outputs(&graph, relay, module)?;
    super::crosscheck::graph_against_sources(&desc.inputs, &desc.outputs, module, relay, gname).in_member(gname)?;
    let functions = called_functions(&graph, desc, gname)?;
    desc.executor = Executor::Graph(GraphExec { graph, bindings, functions });
    Ok(gname.to_string())
}

/// The outputs: the heads, named from relay `output_tensor_names` or TVM's convention.
fn graph_outputs(graph: &Graph, relay: Option<&RelayMain>, module: &ModuleMeta) -> Result<Vec<TensorInfo>> {
    let out_names = output_names(graph.heads.len(), relay, module);
    let raw: Vec<&str> = out_names.iter().map(String::as_str).collect();
    let idents = names::unique_idents(&raw).at("outputs")?;
    Ok(graph
        .heads
        .iter()
        .zip(out_names.iter().zip(idents))
        .map(|(h, (name, ident))| {
            let eid = graph.eid(*h);
            TensorInfo {
                name: name.clone(),
                ident,
                dtype: graph.dltype[eid],
                shape: graph.shape[eid].clone(),
                shape_source: "graph config".into(),
                dtype_source: "graph config".into(),
            }
        })
        .collect())
}

/// The functions the graph calls, each checked to be a packed function the code defines.
fn called_functions(graph: &Graph, desc: &ModelDesc, gname: &str) -> Result<Vec<String>> {
    let mut functions = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Definitions by name, found once (a graph may call 10^5 functions).
    let mut defined = std::collections::HashMap::new();
    for s in &desc.code.sources {
        for f in s.scan.functions.iter().filter(|f| f.defined) {
            defined.entry(f.name.as_str()).or_insert((s, f));
        }
    }
    for (nid, node) in graph.nodes.iter().enumerate() {
        if let NodeOp::Call { func_name, flatten_data } = &node.op {
            if *flatten_data {
                return Err(
                    Error::unsupported(format!("node {nid} ({func_name}) uses flatten_data=1")).in_member(gname)
                );
            }
            match defined.get(func_name.as_str()).copied() {
                Some((src, f)) if !f.is_packed() => {
                    return Err(Error::invalid(format!(
                        "{func_name} (called by graph node {nid}) is not a packed function in {}",
                        src.member
                    )));
                }
                Some(_) => {}
                None if !desc.code.objects.is_empty() => {} // checked against the object's symbols at build time
                None => {
                    return Err(Error::missing(format!(
                        "function {func_name} (called by graph node {nid}): no C source defines it"
                    ))
                    .in_member(gname));
                }
            }
            if seen.insert(func_name.as_str()) {
                functions.push(func_name.clone());
            }
        }
    }
    Ok(functions)
}
