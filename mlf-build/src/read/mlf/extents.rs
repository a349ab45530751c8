//! Every graph operator call against the C of its kernel: the bytes the kernel stores into each
//! tensor argument (bounded by [`kernel_stores`]) must fit the graph entry passed there, as
//! `graph.json` gives it (dtype × shape) — the arena is planned from `graph.json`, so an entry
//! smaller than its kernel writes would be written past its slot at run time. Only stores with
//! an exact bound decide; the rest are counted as skipped and never refuse an archive. A C file
//! that defines a macro (besides TVM's `TVM_EXPORTS`) is not read: the macro could change what
//! its kernels' tokens mean.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::model::{CSource, Graph, NodeOp};
use crate::read::csource::{KernelStores, defines_macros, kernel_stores};

/// How many stores of the kernels a graph calls were bounded and how many skipped (each kernel
/// counted once, however often the graph calls it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Kernels whose C definition was read.
    pub kernels: usize,
    /// Stores into arguments with an exact bound.
    pub bounded: usize,
    /// Stores into arguments given no bound.
    pub skipped: usize,
    /// Arguments of graph calls compared with their entry.
    pub compared: usize,
    /// Of those, the arguments whose kernel writes exactly the entry's bytes.
    pub filled: usize,
}

/// Checks every call of `graph` against the stores of its kernel in `sources`; an error names
/// the node, the kernel, the argument, the entry, both byte counts and `gname`.
pub fn kernel_stores_fit(graph: &Graph, sources: &[CSource], gname: &str) -> Result<StoreCounts> {
    let mut counts = StoreCounts::default();
    let mut texts: HashMap<&str, &str> = HashMap::new();
    for s in sources {
        let Ok(text) = s.bytes.as_str() else { continue };
        if defines_macros(text) {
            continue; // a macro may change what the kernel's tokens mean
        }
        for item in s.scan.items.iter().filter(|i| i.is_function_definition) {
            if let Some(body) = text.get(item.range.clone()) {
                texts.entry(item.name.as_str()).or_insert(body);
            }
        }
    }
    let mut cache: HashMap<&str, KernelStores> = HashMap::new();
    for (nid, node) in graph.nodes.iter().enumerate() {
        let NodeOp::Call { func_name, .. } = &node.op else { continue };
        let Some(text) = texts.get(func_name.as_str()) else { continue };
        let stores = cache.entry(func_name.as_str()).or_insert_with(|| {
            let st = kernel_stores(text);
            counts.kernels += 1;
            counts.bounded += st.bounded;
            counts.skipped += st.skipped;
            st
        });
        for (&arg, &writes) in &stores.writes {
            let eid = match arg.checked_sub(node.inputs.len()) {
                None => graph.eid(node.inputs[arg]),
                Some(out) if out < node.num_outputs => graph.node_row_ptr[nid] + out,
                Some(_) => continue,
            };
            let has = graph.entry_bytes(eid);
            counts.compared += 1;
            counts.filled += usize::from(writes == has);
            if writes > has {
                let owner = if arg < node.inputs.len() { node.inputs[arg].node } else { nid };
                return Err(Error::mismatch(format!(
                    "graph node {nid} ({}) calls {func_name}, whose C stores {writes} bytes into its argument {arg} \
                     (graph entry {eid}, of node {} ({}): {} {:?}, {has} bytes); the graph config ({gname}) gives \
                     the entry fewer bytes than the compiled kernel writes, so it would write past its arena slot",
                    crate::error::shown(&node.name),
                    owner,
                    crate::error::shown(&graph.nodes[owner].name),
                    graph.dltype[eid],
                    graph.shape[eid],
                )));
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    #[test]
    fn files_with_macros_are_not_read() {
        assert!(!crate::read::csource::defines_macros("#define TVM_EXPORTS\n#include <x.h>\n"));
        assert!(crate::read::csource::defines_macros("#define TVM_EXPORTS\n# define float double\n"));
        assert!(crate::read::csource::defines_macros("#undef int32_t\n"));
        assert!(crate::read::csource::defines_macros("#define TVM_EXPORTS 1\n"));
    }
}
