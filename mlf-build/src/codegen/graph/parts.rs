//! The pieces of a graph module besides `run()`: the tensors it binds (slot numbers, names for
//! comments, dtype and shape statics), the model's C functions, and its parameters.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::codegen::tvm::{self, ParamCode};
use crate::codegen::{ident, usize_lit};
use crate::error::{Error, Result};
use crate::model::{ArgBinding, GraphExec, ModelDesc, NodeOp};
use crate::plan::graph::{GraphPlan, Slot};
use crate::plan::params::graph_region;
use crate::support::dtype::DType;
use crate::support::names;

/// The graph entries the run binds: their slot numbers, names, dtypes and shapes.
pub(super) struct Tensors {
    /// Entry id → slot number (only the entries a call or an output uses).
    pub(super) slot: BTreeMap<usize, u16>,
    /// What each entry is (`input `x``, `the result of `f``, …), by entry id.
    pub(super) names: Vec<String>,
    /// dtype → its `DT_…` constant.
    pub(super) dtypes: BTreeMap<DType, Ident>,
    /// shape → its `SHAPE_…` static.
    pub(super) shapes: BTreeMap<Vec<u64>, Ident>,
    /// The `DT_…` and `SHAPE_…` items.
    pub(super) statics: Vec<TokenStream>,
}

impl Tensors {
    pub(super) fn new(desc: &ModelDesc, g: &GraphExec, plan: &GraphPlan) -> Result<Tensors> {
        let graph = &g.graph;
        let mut slot = BTreeMap::new();
        for (e, s) in plan.slots.iter().enumerate() {
            if *s != Slot::Unused {
                let n = u16::try_from(slot.len()).map_err(|_| Error::unsupported("more than 65535 tensors"))?;
                slot.insert(e, n);
            }
        }
        let (mut statics, dtypes) = tvm::dtype_consts(slot.keys().map(|&e| graph.dltype[e]));
        let (shape_items, shapes) = tvm::shape_statics(slot.keys().map(|&e| &graph.shape[e]));
        statics.extend(shape_items);
        Ok(Tensors { slot, names: entry_names(desc, g), dtypes, shapes, statics })
    }

    /// The descriptor static of entry `e` (`TENSOR_<slot>`).
    pub(super) fn ident(&self, e: usize) -> Ident {
        ident(&format!("TENSOR_{}", self.slot[&e]))
    }

    /// `tensor <slot>: <what> (<dtype> <shape>)`.
    pub(super) fn describe(&self, g: &GraphExec, e: usize) -> String {
        let graph = &g.graph;
        format!("tensor {}: {} ({} {:?})", self.slot[&e], self.names[e], graph.dltype[e], graph.shape[e])
    }
}

/// What each graph entry is, for comments: an input or parameter by name, the result of an
/// operator, with the model's output name when it is one.
fn entry_names(desc: &ModelDesc, g: &GraphExec) -> Vec<String> {
    let graph = &g.graph;
    let mut names = vec![String::new(); graph.num_entries()];
    for (nid, node) in graph.nodes.iter().enumerate() {
        let first = graph.node_row_ptr[nid];
        match &node.op {
            NodeOp::Null => {
                names[first] = match g.bindings.get(&nid) {
                    Some(ArgBinding::Input(i)) => format!("input `{}`", desc.inputs[*i].name),
                    Some(ArgBinding::Param(k)) => format!("parameter `{}`", desc.params[*k].name),
                    None => format!("`{}`", node.name),
                }
            }
            NodeOp::Nop => names[first] = format!("`{}`, a view of {}", node.name, names[graph.eid(node.inputs[0])]),
            NodeOp::Call { func_name, .. } => {
                for i in 0..node.num_outputs {
                    names[first + i] = if node.num_outputs == 1 {
                        format!("the result of `{func_name}`")
                    } else {
                        format!("result {i} of `{func_name}`")
                    };
                }
            }
        }
    }
    for (h, t) in graph.heads.iter().zip(&desc.outputs) {
        names[graph.eid(*h)].push_str(&format!(", the model's output `{}`", t.name));
    }
    names
}

/// The model's C functions: their declarations, the table of them, and the Rust name of each.
pub(super) struct Kernels {
    pub(super) decls: Vec<TokenStream>,
    pub(super) ids: BTreeMap<String, Ident>,
}

impl Kernels {
    pub(super) fn new(desc: &ModelDesc, plan: &GraphPlan, symbol_prefix: &str) -> Kernels {
        let lookup = desc.params.iter().filter_map(|p| p.linked.as_ref().map(|_| "_lookup_linked_param"));
        let mut decls = Vec::new();
        let mut ids = BTreeMap::new();
        for f in plan.calls.iter().map(|c| c.func.as_str()).chain(lookup) {
            if ids.contains_key(f) {
                continue;
            }
            let id = ident(&rust_fn_ident(f));
            let link = format!("{symbol_prefix}{f}");
            let decl = tvm::packed_fn_decl(&id);
            decls.push(quote! {
                #[link_name = #link]
                #decl
            });
            ids.insert(f.to_string(), id);
        }
        Kernels { decls, ids }
    }

    /// The `kernels` module and the `KERNELS` table.
    pub(super) fn items(&self) -> Vec<TokenStream> {
        let decls = &self.decls;
        let table: Vec<TokenStream> = self
            .ids
            .iter()
            .map(|(name, id)| quote!((#name, kernels::#id as ::mlf_runtime::tvm::ffi::PackedFn)))
            .collect();
        let n = usize_lit(table.len());
        vec![
            quote! {
                /// The model's C functions (packed calling convention), under the private names
                /// its C was compiled with.
                mod kernels {
                    unsafe extern "C" {
                        #(#decls)*
                    }
                }
            },
            quote! {
                /// The model's packed C functions by name (for tools that call kernels themselves).
                #[doc(hidden)]
                pub static KERNELS: [(&str, ::mlf_runtime::tvm::ffi::PackedFn); #n] = [#(#table),*];
            },
        ]
    }
}

/// The parameters: embedded statics (by parameter index) or the references to external files,
/// and the resident offsets and region of external ones.
pub(super) struct Params {
    pub(super) statics: Vec<TokenStream>,
    pub(super) embedded: BTreeMap<usize, Ident>,
    pub(super) resident_offsets: Vec<u64>,
    pub(super) region: u64,
}

impl Params {
    pub(super) fn new(desc: &ModelDesc, plan: &GraphPlan, params: ParamCode<'_>) -> Params {
        let mut out =
            Params { statics: Vec::new(), embedded: BTreeMap::new(), resident_offsets: Vec::new(), region: 0 };
        match params {
            ParamCode::Embedded(files) => {
                for (k, p) in desc.params.iter().enumerate() {
                    if let Some(Some(symbol)) = files.get(k) {
                        let id = ident(&format!("PARAM_{}", names::const_ident(&p.name)));
                        let doc = format!(
                            " Parameter `{}`: {} {:?}, {} bytes, used in place.",
                            p.name,
                            p.dtype,
                            p.shape,
                            p.bytes()
                        );
                        out.statics.push(tvm::embedded_param(&id, symbol, p.bytes(), &doc));
                        out.embedded.insert(k, id);
                    }
                }
            }
            ParamCode::Resident(split) | ParamCode::Streamed(split) | ParamCode::Lazy(split) => {
                let files: Vec<String> =
                    split.files.iter().map(|f| format!("`{}` = {}", f.id, f.names.join(", "))).collect();
                let doc = format!(
                    " The parameters this model reads from a `ParamSource` ({} files, {} bytes): {}.",
                    split.files.len(),
                    split.files.iter().map(|f| f.bytes()).sum::<u64>(),
                    files.join("; ")
                );
                out.statics.push(tvm::param_refs(split, &doc));
                (out.resident_offsets, out.region) = graph_region(plan, split, params.placement());
            }
        }
        out
    }
}

/// A Rust identifier for a C function name (they are valid already; keywords are not possible
/// in TVM names, but be safe).
fn rust_fn_ident(name: &str) -> String {
    let s = names::sanitize(name);
    if s.starts_with(|c: char| c.is_ascii_digit()) { format!("_{s}") } else { s }
}
