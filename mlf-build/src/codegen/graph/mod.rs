//! The module generated for a graph-executor model: a straight-line `run()` that binds every
//! graph entry to its planned place and calls each operator through the packed ABI, each
//! statement under a comment that says which tensor or call it is.

mod parts;
mod run;

use proc_macro2::TokenStream;
use quote::quote;

use super::skeleton::{self, Field};
use super::tvm::{self, ParamCode, TvmModule};
use super::{arrays, lit};
use crate::error::{Error, Result};
use crate::model::{GraphExec, ModelDesc, Placement};
use crate::plan::graph::GraphPlan;
use crate::plan::stack::StackFigure;
use parts::{Kernels, Params, Tensors};

/// What the generator needs besides the model and its plan.
#[derive(Clone, Copy, Debug)]
pub struct GraphCodegen<'a> {
    /// Prefix the model's C symbols were renamed with (`mlf_<hash>_`).
    pub symbol_prefix: &'a str,
    /// Where the parameters live.
    pub params: ParamCode<'a>,
    /// The stack a run needs, when the C was compiled.
    pub stack: Option<&'a StackFigure>,
    /// The shared arena the module's arena is, if any.
    pub shared_arena: Option<&'a str>,
    /// The link sections of the arena and the parameters.
    pub sections: crate::codegen::section::Sections<'a>,
}

/// The justification written above the generated `unsafe` block.
pub const SAFETY: &str = "each call passes the model's own kernel (declared from its C definition, \
    whose packed signature and presence were checked at build time) the descriptors of the tensors \
    the graph gives it, which point at the caller's inputs (stored above), parameters or arena \
    storage of exactly the graph's shapes and dtypes.";

/// Generates the module items.
pub fn module_tokens(desc: &ModelDesc, g: &GraphExec, plan: &GraphPlan, cg: &GraphCodegen<'_>) -> Result<TokenStream> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let tensors = Tensors::new(desc, g, plan)?;
    let kernels = Kernels::new(desc, plan, cg.symbol_prefix);
    let params = Params::new(desc, plan, cg.params);
    let run = run::Run { desc, g, plan, params: cg.params, tensors: &tensors, kernels: &kernels, embedded: &params };
    let tables = run.tables()?;
    // Constant arrays taken out of the C: the table declared, bound once loaded or per call.
    let split = cg.params.split();
    let arrays = match (split, arrays::table(split)) {
        (Some(split), Some(t)) => {
            let placement = cg.params.placement();
            let mut code = arrays::array_code(split, t, placement, cg.symbol_prefix, &params.resident_offsets, false);
            match placement {
                Placement::Streamed => code.statics.push(arrays::graph_steps(split, t, plan, None)),
                Placement::Lazy => {
                    code.statics.push(arrays::graph_steps(split, t, plan, Some(&params.resident_offsets)))
                }
                _ => {}
            }
            code
        }
        _ => arrays::ArrayCode::default(),
    };
    let export = tvm::object_region_symbol(cg.params.split(), cg.symbol_prefix);
    let api = tvm::param_api(
        cg.params.placement(),
        tvm::RunEnter::Session { align: plan.align },
        (params.region, export, cg.sections.params),
        &params.resident_offsets,
        arrays.after_load,
    );
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
    statics.extend(arrays.statics);
    let state = if tables.linked {
        vec![Field::new("linked", quote!(bool), quote!(false), "Whether the linked parameters were looked up.")]
    } else {
        Vec::new()
    };
    tvm::module(TvmModule {
        desc,
        arena: plan.arena_bytes,
        arena_doc: "Bytes of static RAM this module allocates (its arena: activations, outputs and every \
                    operator's scratch memory, planned at build time).",
        consts: [quote! {
            /// Bytes TVM's own graph executor would allocate for this model (one buffer per storage
            /// id, parameters and inputs included, plus its workspace pool).
            pub const TVM_PLAN_BYTES: usize = #tvm_total;
        }]
        .into_iter()
        .chain(crate::codegen::stack::stack_consts(cg.stack))
        .collect(),
        output_offsets: plan.outputs.iter().map(|o| o.offset).collect(),
        decls: kernels.items().into_iter().chain(arrays.decls).collect(),
        statics,
        tables: tables.items,
        params: api,
        state,
        model_doc,
        on_take: tables.on_take,
        before: tables.before,
        calls: tables.calls,
        safety: SAFETY,
        after: tables.after,
        high_water_doc: "Highest arena offset the workspace allocator reached in the last run (≤ [`ARENA_BYTES`]).",
        shared: skeleton::Shared::new(cg.shared_arena, false)?,
        arena_section: cg.sections.arena,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Executor;
    use crate::plan::graph::{CopyIn, Slot};
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
        let mut split = Split::default();
        split.add_params(&desc.params);
        for params in [ParamCode::Resident(&split), ParamCode::Streamed(&split), ParamCode::Lazy(&split)] {
            let cg = GraphCodegen {
                symbol_prefix: "mlf_test_",
                stack: None,
                params,
                shared_arena: None,
                sections: Default::default(),
            };
            let e = module_tokens(&desc, g, &plan, &cg).unwrap_err().to_string();
            assert!(e.contains("external parameter shares storage with an activation"), "{e}");
        }
    }
}
