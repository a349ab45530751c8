//! The module generated for an AOT model: `run()` calls TVM's own entry point (the C-interface
//! `tvmgen_<m>_run`, a packed entry, or the unpacked main) with the caller's inputs in place and
//! outputs, workspace and pools in the static arena, each argument under a comment.

mod args;

use proc_macro2::TokenStream;
use quote::quote;

use super::render::comment;
use super::tvm::{self, ParamCode, TvmModule, bytes};
use super::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{AotCall, AotExec, ModelDesc};
use crate::plan::aot::AotPlan;
use crate::support::names;
use args::Args;

/// The justification written above the generated `unsafe` block.
pub const SAFETY: &str = "the entry point is the model's own (found among the C definitions, its \
    signature read from the C and checked at build time against the inputs and outputs), and every \
    pointer it receives is bound above to a caller input or an arena buffer of exactly that tensor's \
    size; the workspace window holds the compiler's workspace figure plus alignment slack.";

/// The entry point's declaration and its call, with the comment that describes the call.
fn entry(desc: &ModelDesc, a: &AotExec, args: &Args, symbol_prefix: &str) -> Result<(TokenStream, TokenStream)> {
    let symbol = a.call.symbol().to_string();
    let link = format!("{symbol_prefix}{symbol}");
    let f = ident(&names::sanitize(&symbol));
    // `(arg0: *mut c_void, …)` and the matching `unsafe extern "C" fn(*mut c_void, …) -> i32`.
    let pointer_fn = |n: usize| {
        let void = quote!(*mut ::core::ffi::c_void);
        let params = (0..n).map(|i| {
            let p = ident(&format!("arg{i}"));
            quote!(#p: #void)
        });
        let tys = (0..n).map(|_| void.clone());
        (quote!(pub fn #f(#(#params),*) -> i32;), quote!(unsafe extern "C" fn(#(#tys),*) -> i32))
    };
    let (ins, outs, pools) = (&args.inputs, &args.outputs, &args.pools);
    let (decl, call, how) = match &a.call {
        AotCall::CInterface { pools: takes_pools, .. } => {
            let arity = if *takes_pools { 3 } else { 2 };
            if *takes_pools == pools.is_empty() {
                return Err(Error::invalid(format!(
                    "{symbol} takes a workspace_pools struct but the header declares {} pools",
                    pools.len()
                )));
            }
            let (decl, ty) = pointer_fn(arity);
            let n = usize_lit(arity);
            let call = quote!(r.call_struct_entry::<_, #n, _, _, _>(#symbol, entry::#f as #ty, [#(#ins),*], [#(#outs),*], [#(#pools),*])?;);
            (
                decl,
                call,
                "with the `inputs` and `outputs` structs (and `workspace_pools`) filled from the arguments in the header's order",
            )
        }
        AotCall::Packed { .. } => {
            let call = quote!(r.call(0, #symbol, entry::#f, [#(#ins,)* #(#outs),*])?;);
            (tvm::packed_fn_decl(&f), call, "as a packed function: one `DLTensor` per argument")
        }
        AotCall::Unpacked { .. } => {
            let (_, def) =
                desc.code.definition(&symbol).ok_or_else(|| Error::missing(format!("definition of {symbol}")))?;
            let n_args = ins.len() + outs.len();
            if def.params.len() != n_args {
                return Err(Error::unsupported(format!(
                    "{symbol} takes {} pointers but the model has {} inputs and {} outputs (pools or devices the C does not provide itself are not supported)",
                    def.params.len(),
                    desc.inputs.len(),
                    desc.outputs.len()
                )));
            }
            if n_args > 16 {
                return Err(Error::unsupported(format!("{symbol} takes more than 16 pointers")));
            }
            let (decl, ty) = pointer_fn(n_args);
            let call = quote!(r.call_unpacked(0, #symbol, entry::#f as #ty, [#(#ins,)* #(#outs),*])?;);
            (decl, call, "with one pointer per argument")
        }
    };
    let decls = quote! {
        /// The model's entry point, under the private name its C was compiled with.
        mod entry {
            unsafe extern "C" {
                #[link_name = #link]
                #decl
            }
        }
    };
    let note = comment(format!("Call `{symbol}` {how}."));
    Ok((decls, quote!(#note #call)))
}

/// Generates the module items. `symbol_prefix` is the prefix the model's C symbols were renamed
/// with; `params` says whether the constant pool is read through a `ParamSource`.
pub fn module_tokens(
    desc: &ModelDesc,
    a: &AotExec,
    plan: &AotPlan,
    symbol_prefix: &str,
    params: ParamCode<'_>,
) -> Result<TokenStream> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let args = Args::new(desc, a, plan, params)?;
    let (decls, call) = entry(desc, a, &args, symbol_prefix)?;
    let mut statics = args.statics.clone();
    if let Some(split) = params.split() {
        let total: u64 = split.files.iter().map(|f| f.bytes()).sum();
        let doc = format!(" The constant pool this model reads from a `ParamSource` ({total} bytes).");
        statics.push(tvm::param_refs(split, &doc));
    }
    let api = tvm::param_api(params.placement(), args.count, plan.align, args.region.1, &args.region.0);
    let (ws, tvm_ws) = (lit(plan.workspace_bytes), lit(plan.tvm_workspace_bytes));
    let slack = match plan.slack_bytes {
        0 => String::new(),
        n => format!(" plus {n} bytes of alignment slack"),
    };
    let model_doc = format!(
        " The `{}` model (TVM AOT executor: {}). Static RAM: {} bytes of arena ({} bytes of \
         workspace for `TVMBackendAllocWorkspace`, from {}{slack}; then the outputs).",
        desc.name, a.style, plan.arena_bytes, plan.workspace_bytes, a.workspace_source,
    );
    let workspace = comment(match plan.workspace_bytes {
        0 => "TVMBackendAllocWorkspace has no window: the C carries its own pools.".to_string(),
        n => format!(
            "TVMBackendAllocWorkspace serves arena {} ({} of the compiler's figure{slack}).",
            bytes(0, n),
            plan.tvm_workspace_bytes
        ),
    });
    let bind = &args.bind;
    tvm::module(TvmModule {
        desc,
        arena: plan.arena_bytes,
        arena_doc: "Bytes of static RAM this module allocates (its arena: the workspace window, the \
                    outputs and any pools the C expects from the application).",
        consts: vec![
            quote! {
                /// Bytes of workspace the compiler recorded (`TVMGEN_<M>_WORKSPACE_SIZE` / metadata; 0
                /// when the C carries its own USMP pools).
                pub const TVM_WORKSPACE_BYTES: usize = #tvm_ws;
            },
            quote! {
                /// Bytes of the arena given to `TVMBackendAllocWorkspace` (the compiler's figure plus
                /// alignment slack).
                pub const WORKSPACE_BYTES: usize = #ws;
            },
            quote! {
                /// The workspace window lies inside the arena (checked when the module compiles).
                const _: () = assert!(WORKSPACE_BYTES <= ARENA_BYTES);
            },
        ],
        output_offsets: plan.outputs.clone(),
        decls: vec![decls],
        statics,
        params: api,
        model_doc,
        bind: quote!(#(#bind)* #workspace r.workspace(0, #ws);),
        calls: call,
        safety: SAFETY,
        after: quote!(),
        high_water_doc: "Most workspace bytes `TVMBackendAllocWorkspace` used in the last run (≤ [`WORKSPACE_BYTES`]).",
    })
}
