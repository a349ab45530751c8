//! The module generated for a graph-executor model: a straight-line `run()` that binds every
//! graph entry to its planned place and calls each operator through the packed ABI, each
//! statement under a comment that says which tensor or call it is.

mod run;

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::tvm::{self, ParamCode, TvmModule};
use super::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{ArgBinding, GraphExec, ModelDesc, NodeOp};
use crate::plan::graph::{GraphPlan, Slot};
use crate::plan::params::graph_region;
use crate::support::dtype::DType;
use crate::support::names;

/// What the generator needs besides the model and its plan.
#[derive(Clone, Copy, Debug)]
pub struct GraphCodegen<'a> {
    /// Prefix the model's C symbols were renamed with (`mlf_<hash>_`).
    pub symbol_prefix: &'a str,
    /// Where the parameters live.
    pub params: ParamCode<'a>,
}

/// The justification written above the generated `unsafe` block.
pub const SAFETY: &str = "each call passes the model's own kernel (declared from its C definition, \
    whose packed signature and presence were checked at build time) the tensors the graph gives \
    it, bound above to caller inputs, embedded parameters or arena storage of exactly the graph's \
    shapes and dtypes.";

/// The graph entries the run binds: their slot numbers, names, dtypes and shapes.
struct Tensors {
    /// Entry id → slot number (only the entries a call or an output uses).
    slot: BTreeMap<usize, u16>,
    /// What each entry is (`input `x``, `the result of `f``, …), by entry id.
    names: Vec<String>,
    /// dtype → its `DT_…` constant.
    dtypes: BTreeMap<DType, Ident>,
    /// shape → its `SHAPE_…` static.
    shapes: BTreeMap<Vec<u64>, Ident>,
    /// The `DT_…` and `SHAPE_…` items.
    statics: Vec<TokenStream>,
}

impl Tensors {
    fn new(desc: &ModelDesc, g: &GraphExec, plan: &GraphPlan) -> Result<Tensors> {
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

    /// Entry `e`'s slot number as a literal.
    fn slot(&self, e: usize) -> proc_macro2::Literal {
        usize_lit(self.slot[&e] as usize)
    }

    /// `tensor <slot>: <what> (<dtype> <shape>)`.
    fn describe(&self, g: &GraphExec, e: usize) -> String {
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
struct Kernels {
    decls: Vec<TokenStream>,
    ids: BTreeMap<String, Ident>,
}

impl Kernels {
    fn new(desc: &ModelDesc, plan: &GraphPlan, symbol_prefix: &str) -> Kernels {
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
    fn items(&self) -> Vec<TokenStream> {
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
struct Params {
    statics: Vec<TokenStream>,
    embedded: BTreeMap<usize, Ident>,
    resident_offsets: Vec<u64>,
    region: u64,
}

impl Params {
    fn new(desc: &ModelDesc, plan: &GraphPlan, params: ParamCode<'_>) -> Params {
        let mut out =
            Params { statics: Vec::new(), embedded: BTreeMap::new(), resident_offsets: Vec::new(), region: 0 };
        match params {
            ParamCode::Embedded(files) => {
                for (k, p) in desc.params.iter().enumerate() {
                    if let Some(Some(path)) = files.get(k) {
                        let id = ident(&format!("PARAM_{}", names::const_ident(&p.name)));
                        let doc = format!(
                            " Parameter `{}`: {} {:?}, {} bytes, used in place.",
                            p.name,
                            p.dtype,
                            p.shape,
                            p.bytes()
                        );
                        out.statics.push(tvm::embedded_param(&id, path, p.bytes(), &doc));
                        out.embedded.insert(k, id);
                    }
                }
            }
            ParamCode::Resident(split) | ParamCode::Streamed(split) => {
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

/// Generates the module items.
pub fn module_tokens(desc: &ModelDesc, g: &GraphExec, plan: &GraphPlan, cg: &GraphCodegen<'_>) -> Result<TokenStream> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let tensors = Tensors::new(desc, g, plan)?;
    let kernels = Kernels::new(desc, plan, cg.symbol_prefix);
    let params = Params::new(desc, plan, cg.params);
    let run = run::Run { desc, g, plan, params: cg.params, tensors: &tensors, kernels: &kernels, embedded: &params };
    let (bind, calls, after) = (run.bind()?, run.calls(), run.after());
    let api =
        tvm::param_api(cg.params.placement(), tensors.slot.len(), plan.align, params.region, &params.resident_offsets);
    let tvm_total = lit(plan.tvm.storage_bytes + plan.tvm.workspace_bytes);
    let model_doc = format!(
        " The `{}` model (TVM graph executor, {} operator calls). Static RAM: {} bytes of arena \
         ({} layout); TVM's own graph executor would allocate {} bytes of storage (parameters \
         included) plus {} bytes of workspace.",
        desc.name,
        plan.calls.len(),
        plan.arena_bytes,
        plan.layout,
        plan.tvm.storage_bytes,
        plan.tvm.workspace_bytes
    );
    let mut statics = tensors.statics;
    statics.extend(params.statics);
    tvm::module(TvmModule {
        desc,
        arena: plan.arena_bytes,
        arena_doc: "Bytes of static RAM this module allocates (its arena: activations, outputs and every \
                    operator's scratch memory, planned at build time).",
        consts: vec![quote! {
            /// Bytes TVM's own graph executor would allocate for this model (one buffer per storage
            /// id, parameters and inputs included, plus its workspace pool).
            pub const TVM_PLAN_BYTES: usize = #tvm_total;
        }],
        output_offsets: plan.outputs.iter().map(|o| o.offset).collect(),
        decls: kernels.items(),
        statics,
        params: api,
        model_doc,
        bind,
        calls,
        safety: SAFETY,
        after,
        high_water_doc: "Highest arena offset the workspace allocator reached in the last run (≤ [`ARENA_BYTES`]).",
    })
}

/// A Rust identifier for a C function name (they are valid already; keywords are not possible
/// in TVM names, but be safe).
fn rust_fn_ident(name: &str) -> String {
    let s = names::sanitize(name);
    if s.starts_with(|c: char| c.is_ascii_digit()) { format!("_{s}") } else { s }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Executor;
    use crate::plan::graph::CopyIn;
    use crate::plan::split::Split;

    fn digits() -> ModelDesc {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar");
        crate::open(path).unwrap()
    }

    /// A parameter whose storage the model writes is copied into the arena before the first
    /// call; with external parameters there is no embedded copy to read, which is refused.
    #[test]
    fn external_parameter_copied_into_the_arena_is_refused() {
        let desc = digits();
        let Executor::Graph(g) = &desc.executor else { panic!("a graph model") };
        let mut plan = crate::plan::graph::plan(&desc, g, 16).unwrap();
        plan.copies_in.push(CopyIn { from: Slot::Param { index: 0 }, offset: 0, bytes: desc.params[0].bytes() });
        for streamed in [false, true] {
            let mut split = Split::default();
            for p in &desc.params {
                let k = split.add(&p.name, p.dtype, &p.shape, &p.data);
                split.of_param.push(k);
            }
            let cg = GraphCodegen {
                symbol_prefix: "mlf_test_",
                params: if streamed { ParamCode::Streamed(&split) } else { ParamCode::Resident(&split) },
            };
            let e = module_tokens(&desc, g, &plan, &cg).unwrap_err().to_string();
            assert!(e.contains("external parameter shares storage with an activation"), "{e}");
        }
    }
}
