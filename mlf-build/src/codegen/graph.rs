//! The module generated for a graph-executor model: a straight-line `run()` that binds every
//! entry to its planned place and calls each operator through the packed ABI.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;

use super::common::{self, lit};
use super::{ident, usize_lit};
use crate::error::{Error, Result};
use crate::model::{GraphExec, ModelDesc};
use crate::plan::graph::{GraphPlan, Slot};

pub use super::common::ParamCode;

/// What the generator needs besides the model and its plan.
#[derive(Clone, Copy, Debug)]
pub struct GraphCodegen<'a> {
    /// Prefix the model's C symbols were renamed with (`mlf_<hash>_`).
    pub symbol_prefix: &'a str,
    /// Where the parameters live.
    pub params: ParamCode<'a>,
}

/// Generates the module items.
pub fn module_tokens(desc: &ModelDesc, g: &GraphExec, plan: &GraphPlan, cg: &GraphCodegen<'_>) -> Result<TokenStream> {
    let graph = &g.graph;
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }

    // Dense slot numbers for the entries that are used.
    let mut slot_no: BTreeMap<usize, u16> = BTreeMap::new();
    for (e, s) in plan.slots.iter().enumerate() {
        if *s != Slot::Unused {
            let n = u16::try_from(slot_no.len()).map_err(|_| Error::unsupported("more than 65535 tensors"))?;
            slot_no.insert(e, n);
        }
    }
    let n_slots = usize_lit(slot_no.len());
    let (dtype_items, dtypes) = common::dtype_consts(slot_no.keys().map(|&e| graph.dltype[e]));
    let shapes: Vec<&Vec<u64>> = slot_no.keys().map(|&e| &graph.shape[e]).collect();
    let (shape_items, shape_ids) = common::shape_statics(shapes);

    // Kernels.
    let mut kernel_decls = Vec::new();
    let mut kernel_ids: BTreeMap<String, proc_macro2::Ident> = BTreeMap::new();
    for f in plan
        .calls
        .iter()
        .map(|c| c.func.as_str())
        .chain(desc.params.iter().filter_map(|p| p.linked.as_ref().map(|_| "_lookup_linked_param")))
    {
        if kernel_ids.contains_key(f) {
            continue;
        }
        let id = ident(&rust_fn_ident(f));
        let link = format!("{}{f}", cg.symbol_prefix);
        let decl = common::packed_fn_decl(&id);
        kernel_decls.push(quote! {
            #[link_name = #link]
            #decl
        });
        kernel_ids.insert(f.to_string(), id);
    }

    // The kernel table (for tools that drive the kernels themselves, e.g. benchmarks).
    let table: Vec<TokenStream> = kernel_ids
        .iter()
        .map(|(name, id)| quote!((#name, kernels::#id as ::mlf_runtime::tvm::ffi::PackedFn)))
        .collect();
    let n_kernels = usize_lit(table.len());

    // Parameters: embedded statics, or references to external files.
    let mut param_items = Vec::new();
    let mut param_ids = BTreeMap::new();
    let mut resident_offsets: Vec<u64> = Vec::new();
    let mut param_region = 0u64;
    match cg.params {
        ParamCode::Embedded(files) => {
            for (k, p) in desc.params.iter().enumerate() {
                if let Some(Some(path)) = files.get(k) {
                    let id = ident(&format!("PARAM_{}", crate::support::names::const_ident(&p.name)));
                    let doc = format!(
                        " Parameter `{}`: {} {:?}, {} bytes, used in place.",
                        p.name,
                        p.dtype,
                        p.shape,
                        p.bytes()
                    );
                    param_items.push(common::embedded_param(&id, path, p.bytes(), &doc));
                    param_ids.insert(k, id);
                }
            }
        }
        ParamCode::Resident(split) | ParamCode::Streamed(split) => {
            let doc = format!(
                " The parameters this model reads from a `ParamSource` ({} files, {} bytes): {}.",
                split.files.len(),
                split.files.iter().map(|f| f.bytes()).sum::<u64>(),
                split
                    .files
                    .iter()
                    .map(|f| format!("`{}` = {}", f.id, f.names.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            param_items.push(common::param_refs(split, &doc));
            (resident_offsets, param_region) = crate::plan::params::graph_region(plan, split, cg.params.placement());
        }
    }

    // Bindings.
    let mut binds = Vec::new();
    let mut linked_binds = Vec::new();
    for (&e, &n) in &slot_no {
        let n = usize_lit(n as usize);
        let shape = &shape_ids[&graph.shape[e]];
        let dt = &dtypes[&graph.dltype[e]];
        match plan.slots[e] {
            Slot::Unused => {}
            Slot::Input { index } => {
                let f = ident(&desc.inputs[index].ident);
                binds.push(quote!(r.input(#n, &inputs.#f[..], &#shape);));
            }
            Slot::Param { index } => match cg.params {
                ParamCode::Embedded(_) => {
                    let p = param_ids.get(&index).ok_or_else(|| {
                        Error::invalid(format!("parameter {} has no embedded file", desc.params[index].name))
                    })?;
                    binds.push(quote!(r.constant(#n, &#p.0, &#shape, #dt);));
                }
                ParamCode::Resident(split) => {
                    let k = split.of_param[index];
                    let (off, bytes) = (lit(resident_offsets[k]), lit(split.files[k].bytes()));
                    binds.push(quote!(r.param(#n, #off, #bytes, &#shape, #dt);));
                }
                ParamCode::Streamed(_) => {} // bound before each call
            },
            Slot::Linked { sid, .. } => {
                let lookup = &kernel_ids["_lookup_linked_param"];
                let sid = sid as i64;
                linked_binds.push(quote!(r.linked(#n, kernels::#lookup, #sid, &#shape, #dt)?;));
            }
            Slot::Arena { offset } => {
                let off = lit(offset);
                let bytes = lit(graph.entry_bytes(e));
                binds.push(quote!(r.arena(#n, #off, #bytes, &#shape, #dt);));
            }
        }
    }
    let mut copies = Vec::new();
    for c in &plan.copies_in {
        let off = lit(c.offset);
        match c.from {
            Slot::Input { index } => {
                let f = ident(&desc.inputs[index].ident);
                copies.push(quote!(r.copy_in(#off, &inputs.#f[..]);));
            }
            Slot::Param { index } if param_ids.contains_key(&index) => {
                let p = &param_ids[&index];
                copies.push(quote!(r.copy_in(#off, &#p.0[..]);));
            }
            _ => return Err(Error::unsupported("a linked or external parameter shares storage with an activation")),
        }
    }

    // Calls.
    let mut calls = Vec::new();
    for (i, c) in plan.calls.iter().enumerate() {
        let idx = proc_macro2::Literal::u16_unsuffixed(i as u16);
        let name = c.func.as_str();
        let k = &kernel_ids[name];
        let args = c.args.iter().map(|e| proc_macro2::Literal::u16_unsuffixed(slot_no[e]));
        let (ws_off, ws_len) = (lit(c.scratch.0), lit(c.scratch.1));
        let mut stage = Vec::new();
        if let ParamCode::Streamed(split) = cg.params {
            let (layout, _) = crate::plan::params::call_staging(c, plan, split);
            for (k, off) in &layout {
                let kk = usize_lit(*k);
                let o = lit(*off);
                stage.push(quote!(r.stage(source, &PARAMS[#kk], #o)?;));
                for &e in &c.args {
                    if let Slot::Param { index } = plan.slots[e] {
                        if split.of_param[index] == *k {
                            let n = usize_lit(slot_no[&e] as usize);
                            let shape = &shape_ids[&graph.shape[e]];
                            let dt = &dtypes[&graph.dltype[e]];
                            let b = lit(graph.entry_bytes(e));
                            stage.push(quote!(r.param(#n, #o, #b, &#shape, #dt);));
                        }
                    }
                }
            }
        }
        calls.push(quote! {
            #(#stage)*
            r.workspace(#ws_off, #ws_len);
            r.call(#idx, #name, kernels::#k, [#(#args),*])?;
        });
    }
    let mut copies_out = Vec::new();
    for (o, t) in plan.outputs.iter().zip(&desc.outputs) {
        if o.copy_from.is_some() {
            let (n, off, bytes) = (usize_lit(slot_no[&o.eid] as usize), lit(o.offset), lit(t.bytes()));
            copies_out.push(quote!(r.copy_slot(#n, #off, #bytes);));
        }
    }

    let api = common::param_api(cg.params.placement(), &n_slots, plan.align, param_region, &resident_offsets);
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
    let body = quote! {
        #(#binds)*
        #(#copies)*
        unsafe {
            #(#linked_binds)*
            #(#calls)*
        }
        #(#copies_out)*
    };
    common::tvm_model(common::TvmModule {
        desc,
        arena: plan.arena_bytes,
        arena_doc: quote! {
            /// Bytes of static RAM this module allocates (its arena: activations, outputs and every
            /// operator's scratch memory, planned at build time).
        },
        consts: quote! {
            /// Bytes TVM's own graph executor would allocate for this model (one buffer per storage
            /// id, parameters and inputs included, plus its workspace pool).
            pub const TVM_PLAN_BYTES: usize = #tvm_total;
        },
        output_offsets: plan.outputs.iter().map(|o| o.offset).collect(),
        decls: quote! {
            mod kernels {
                unsafe extern "C" {
                    #(#kernel_decls)*
                }
            }

            /// The model's packed C functions by name (for tools that call kernels themselves).
            #[doc(hidden)]
            pub static KERNELS: [(&str, ::mlf_runtime::tvm::ffi::PackedFn); #n_kernels] = [#(#table),*];
        },
        items: quote! {
            #dtype_items
            #shape_items
            #(#param_items)*
        },
        api,
        model_doc,
        body,
        high_water_doc: " Highest arena offset the workspace allocator reached in the last run (≤ [`ARENA_BYTES`]).",
    })
}

/// The justification printed above the generated `unsafe` block.
pub const SAFETY: &str = "each call passes the model's own kernel (declared from its C definition, \
    whose packed signature and presence were checked at build time) the tensors the graph gives \
    it, bound above to caller inputs, embedded parameters or arena storage of exactly the graph's \
    shapes and dtypes.";

/// A Rust identifier for a C function name (they are valid already; keywords are not possible
/// in TVM names, but be safe).
fn rust_fn_ident(name: &str) -> String {
    let s = crate::support::names::sanitize(name);
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
