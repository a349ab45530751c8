//! The module generated for an AOT model: `run()` calls TVM's own entry point (the C-interface
//! `tvmgen_<m>_run`, a packed entry, or the unpacked main) with the caller's inputs in place and
//! output buffers in the static arena.

use proc_macro2::TokenStream;
use quote::quote;

use super::common::{self, ParamCode, lit};
use super::{ident, usize_lit};
use crate::error::{Error, Result};
use crate::model::Placement;
use crate::model::{AotCall, AotExec, ModelDesc};
use crate::plan::aot::AotPlan;

/// The justification printed above the generated `unsafe` block.
pub const SAFETY: &str = "the entry point is the model's own (found among the C definitions, its \
    signature read from the C and checked at build time against the inputs and outputs), and every \
    pointer it receives is bound above to a caller input or an arena buffer of exactly that tensor's \
    size; the workspace window holds the compiler's workspace figure plus alignment slack.";

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
    let n_in = desc.inputs.len();
    let n_out = desc.outputs.len();
    let n_pools = plan.pools.len();
    let n_const = a.main_pools.iter().filter(|p| p.constant).count();
    let n_slots = usize_lit(n_in + n_out + n_pools + n_const);
    if n_const > 0 && params.split().is_none() {
        return Err(Error::invalid("the main takes a constant pool but no external parameters were given"));
    }

    let mut shape_list: Vec<Vec<u64>> = desc.inputs.iter().chain(&desc.outputs).map(|t| t.shape.clone()).collect();
    shape_list.extend(plan.pools.iter().map(|(_, _, b)| vec![*b]));
    shape_list.extend(a.main_pools.iter().map(|p| vec![p.bytes]));
    let (shape_items, shape_ids) = common::shape_statics(shape_list.iter());
    let mut dtypes: Vec<crate::support::dtype::DType> =
        desc.inputs.iter().chain(&desc.outputs).map(|t| t.dtype).collect();
    dtypes.push(crate::support::dtype::DType::U8);
    let (dtype_items, dtype_ids) = common::dtype_consts(dtypes);

    let mut binds = Vec::new();
    for (i, t) in desc.inputs.iter().enumerate() {
        let f = ident(&t.ident);
        let shape = &shape_ids[&t.shape];
        let n = usize_lit(i);
        match &plan.input_copies {
            None => binds.push(quote!(r.input(#n, &inputs.#f[..], &#shape);)),
            Some(offsets) => {
                let (o, b) = (lit(offsets[i]), lit(t.bytes()));
                let dt = &dtype_ids[&t.dtype];
                binds.push(quote! {
                    r.copy_in(#o, &inputs.#f[..]);
                    r.arena(#n, #o, #b, &#shape, #dt);
                });
            }
        }
    }
    for (k, (t, &off)) in desc.outputs.iter().zip(&plan.outputs).enumerate() {
        let n = usize_lit(n_in + k);
        let shape = &shape_ids[&t.shape];
        let dt = &dtype_ids[&t.dtype];
        let (o, b) = (lit(off), lit(t.bytes()));
        binds.push(quote!(r.arena(#n, #o, #b, &#shape, #dt);));
    }
    for (k, (_, off, bytes)) in plan.pools.iter().enumerate() {
        let n = usize_lit(n_in + n_out + k);
        let shape = &shape_ids[&vec![*bytes]];
        let dt = &dtype_ids[&crate::support::dtype::DType::U8];
        let (o, b) = (lit(*off), lit(*bytes));
        binds.push(quote!(r.arena(#n, #o, #b, &#shape, #dt);));
    }
    // Constant pools of a directly called main: in the parameter region (resident) or staged.
    let mut const_binds = Vec::new();
    let mut const_slot_of = Vec::new();
    // Resident or streamed, the pools sit one after the other: the only call (the main) reads
    // them all, so streaming stages them all before it.
    let (const_offsets, region) = match params.split() {
        Some(split) => crate::plan::params::sequential(split.files.iter().map(|f| f.bytes()), plan.align),
        None => (Vec::new(), 0),
    };
    if let Some(split) = params.split() {
        let dt = &dtype_ids[&crate::support::dtype::DType::U8];
        for (k, p) in a.main_pools.iter().filter(|p| p.constant).enumerate() {
            let slot = n_in + n_out + n_pools + k;
            const_slot_of.push(slot);
            let f = &split.files[k];
            if f.bytes() != p.bytes {
                return Err(Error::mismatch(format!(
                    "constant pool {} is {} bytes but its file holds {}",
                    p.name,
                    p.bytes,
                    f.bytes()
                )));
            }
            let off = const_offsets[k];
            let (n, o, b, kk) = (usize_lit(slot), lit(off), lit(p.bytes), usize_lit(k));
            let shape = &shape_ids[&vec![p.bytes]];
            if params.placement() == Placement::Streamed {
                const_binds.push(quote!(r.stage(source, &PARAMS[#kk], #o)?;));
            }
            const_binds.push(quote!(r.param(#n, #o, #b, &#shape, #dt);));
        }
    }
    let slots_in: Vec<_> = (0..n_in).map(|i| proc_macro2::Literal::u16_unsuffixed(i as u16)).collect();
    let mut slots_out: Vec<_> = (n_in..n_in + n_out).map(|i| proc_macro2::Literal::u16_unsuffixed(i as u16)).collect();
    let slots_pools: Vec<_> =
        (n_in + n_out..n_in + n_out + n_pools).map(|i| proc_macro2::Literal::u16_unsuffixed(i as u16)).collect();
    // A directly called main takes its pools after the outputs, in its own order.
    let mut const_k = 0;
    for p in &a.main_pools {
        let slot = if p.constant {
            const_k += 1;
            const_slot_of[const_k - 1]
        } else {
            n_in + n_out
                + plan
                    .pools
                    .iter()
                    .position(|(n, _, _)| *n == p.name)
                    .ok_or_else(|| Error::invalid(format!("pool {} has no place", p.name)))?
        };
        slots_out.push(proc_macro2::Literal::u16_unsuffixed(slot as u16));
    }

    let symbol = a.call.symbol().to_string();
    let link = format!("{symbol_prefix}{symbol}");
    let f = ident(&crate::support::names::sanitize(&symbol));
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
    let (decl, call) = match &a.call {
        AotCall::CInterface { pools, .. } => {
            let arity = if *pools { 3 } else { 2 };
            if *pools != (n_pools > 0) {
                return Err(Error::invalid(format!(
                    "{symbol} takes a workspace_pools struct but the header declares {n_pools} pools"
                )));
            }
            let (decl, ty) = pointer_fn(arity);
            let a_lit = usize_lit(arity);
            (
                decl,
                quote!(r.call_struct_entry::<_, #a_lit, _, _, _>(#symbol, entry::#f as #ty, [#(#slots_in),*], [#(#slots_out),*], [#(#slots_pools),*])?;),
            )
        }
        AotCall::Packed { .. } => {
            (common::packed_fn_decl(&f), quote!(r.call(0, #symbol, entry::#f, [#(#slots_in,)* #(#slots_out),*])?;))
        }
        AotCall::Unpacked { .. } => {
            let (_, def) =
                desc.code.definition(&symbol).ok_or_else(|| Error::missing(format!("definition of {symbol}")))?;
            let n_args = n_in + n_out + a.main_pools.len();
            if def.params.len() != n_args {
                return Err(Error::unsupported(format!(
                    "{symbol} takes {} pointers but the model has {n_in} inputs and {n_out} outputs (pools or devices the C does not provide itself are not supported)",
                    def.params.len()
                )));
            }
            if n_args > 16 {
                return Err(Error::unsupported(format!("{symbol} takes more than 16 pointers")));
            }
            let (decl, ty) = pointer_fn(n_args);
            (decl, quote!(r.call_unpacked(0, #symbol, entry::#f as #ty, [#(#slots_in,)* #(#slots_out),*])?;))
        }
    };

    let ws = lit(plan.workspace_bytes);
    let param_items = match params.split() {
        None => quote!(),
        Some(split) => common::param_refs(
            split,
            &format!(
                " The constant pool this model reads from a `ParamSource` ({} bytes).",
                split.files.iter().map(|f| f.bytes()).sum::<u64>()
            ),
        ),
    };
    let api = common::param_api(params.placement(), &n_slots, plan.align, region, &const_offsets);
    let tvm_ws = lit(plan.tvm_workspace_bytes);
    let model_doc = format!(
        " The `{}` model (TVM AOT executor: {}). Static RAM: {} bytes of arena ({} bytes of \
         workspace for `TVMBackendAllocWorkspace`, from {}{}; then the outputs).",
        desc.name,
        a.style,
        plan.arena_bytes,
        plan.workspace_bytes,
        a.workspace_source,
        if plan.slack_bytes > 0 {
            format!(" plus {} bytes of alignment slack", plan.slack_bytes)
        } else {
            String::new()
        }
    );
    let body = quote! {
        #(#binds)*
        #(#const_binds)*
        r.workspace(0, #ws);
        unsafe {
            #call
        }
    };
    common::tvm_model(common::TvmModule {
        desc,
        arena: plan.arena_bytes,
        arena_doc: quote! {
            /// Bytes of static RAM this module allocates (its arena: the workspace window, the
            /// outputs and any pools the C expects from the application).
        },
        consts: quote! {
            /// Bytes of workspace the compiler recorded (`TVMGEN_<M>_WORKSPACE_SIZE` / metadata; 0
            /// when the C carries its own USMP pools).
            pub const TVM_WORKSPACE_BYTES: usize = #tvm_ws;
            /// Bytes of the arena given to `TVMBackendAllocWorkspace` (the compiler's figure plus
            /// alignment slack).
            pub const WORKSPACE_BYTES: usize = #ws;
            const _: () = assert!(WORKSPACE_BYTES <= ARENA_BYTES);
        },
        output_offsets: plan.outputs.clone(),
        decls: quote! {
            mod entry {
                unsafe extern "C" {
                    #[link_name = #link]
                    #decl
                }
            }
        },
        items: quote! {
            #dtype_items
            #shape_items
            #param_items
        },
        api,
        model_doc,
        body,
        high_water_doc: " Most workspace bytes `TVMBackendAllocWorkspace` used in the last run (≤ [`WORKSPACE_BYTES`]).",
    })
}
