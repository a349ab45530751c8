//! The module generated for an AOT model: `run()` calls TVM's own entry point (the C-interface
//! `tvmgen_<m>_run`, a packed entry, or the unpacked main) with the caller's inputs in place and
//! outputs, workspace and pools in the static arena, each argument under a comment.

mod args;
pub mod workspace;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::render::comment;
use super::skeleton;
use super::tvm::{self, ParamCode, TvmModule, bytes};
use super::{arrays, ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{AotCall, AotExec, ModelDesc, Placement};
use crate::plan::aot::{AotPlan, InlineWorkspace};
use crate::plan::stack::StackFigure;
use crate::support::names;
use args::{Arg, Args};

/// The justification written above the generated `unsafe` block.
pub const SAFETY: &str = "the entry point is the model's own (found among the C definitions, its \
    signature read from the C and checked at build time against the inputs and outputs), and every \
    pointer it receives is the caller's input or an arena buffer of exactly that tensor's size; \
    the workspace window holds the compiler's workspace figure plus alignment slack.";

/// What the entry needs: its declaration, tables, statements before the call, the call, and
/// the descriptors described when the model is taken.
struct Entry {
    decls: TokenStream,
    tables: Vec<TokenStream>,
    before: Vec<TokenStream>,
    call: TokenStream,
    on_take: Vec<TokenStream>,
}

/// The entry point's declaration and its call, with the comment that describes the call.
/// `after_call` runs right after the entry returns, before its return code is checked.
fn entry(
    desc: &ModelDesc,
    a: &AotExec,
    args: &Args,
    (symbol_prefix, params, ws): (&str, Placement, u64),
    (inline, after_call): (Option<&InlineWorkspace>, &TokenStream),
) -> Result<Entry> {
    let symbol = a.call.symbol().to_string();
    let link = format!("{symbol_prefix}{symbol}");
    let f = ident(&names::sanitize(&symbol));
    // `(arg0: *mut c_void, …)`.
    let pointer_fn = |n: usize| {
        let params = (0..n).map(|i| {
            let p = ident(&format!("arg{i}"));
            quote!(#p: *mut ::core::ffi::c_void)
        });
        quote!(pub fn #f(#(#params),*) -> i32;)
    };
    let direct: Vec<&Arg> = args.inputs.iter().chain(&args.outputs).collect();
    let mut e = Entry { decls: quote!(), tables: Vec::new(), before: Vec::new(), call: quote!(), on_take: Vec::new() };
    let decl = match &a.call {
        AotCall::CInterface { pools: takes_pools, .. } => {
            if *takes_pools == args.pools.is_empty() {
                return Err(Error::invalid(format!(
                    "{symbol} takes a workspace_pools struct but the header declares {} pools",
                    args.pools.len()
                )));
            }
            let mut structs = Vec::new();
            for (what, list) in [("inputs", &args.inputs), ("outputs", &args.outputs), ("workspace_pools", &args.pools)]
            {
                if what == "workspace_pools" && !*takes_pools {
                    continue;
                }
                let name = ident(&format!("{what}_struct"));
                let members = list.iter().map(|arg| arg.pointer(params));
                let note = comment(format!("The `{what}` struct: one pointer per member, in the header's order."));
                e.before.push(quote!(#note let mut #name = [#(#members),*];));
                structs.push(quote!(#name.as_mut_ptr().cast()));
            }
            e.before.push(workspace_window(ws));
            let note = comment(format!("Call `{symbol}` with the interface structs."));
            e.call = quote!(#note let rc = entry::#f(#(#structs),*); #after_call r.check(0, #symbol, rc)?;);
            pointer_fn(structs.len())
        }
        AotCall::Packed { .. } => {
            packed(&mut e, &direct, (&symbol, &f), (params, ws), after_call);
            tvm::packed_fn_decl(&f)
        }
        AotCall::Unpacked { .. } => {
            let (_, def) =
                desc.code.definition(&symbol).ok_or_else(|| Error::missing(format!("definition of {symbol}")))?;
            if def.params.len() != direct.len() {
                return Err(Error::unsupported(format!(
                    "{symbol} takes {} pointers but the model has {} inputs and {} outputs (pools or devices the C does not provide itself are not supported)",
                    def.params.len(),
                    desc.inputs.len(),
                    desc.outputs.len()
                )));
            }
            let mut names = Vec::new();
            for arg in &direct {
                let (name, value, note) = (ident(&format!("arg{}", arg.n)), arg.pointer(params), comment(&arg.what));
                e.before.push(quote!(#note let #name = #value;));
                names.push(name);
            }
            e.before.push(workspace_window(ws));
            let note = comment(format!("Call `{symbol}` with one pointer per argument."));
            e.call = quote!(#note let rc = entry::#f(#(#names),*); #after_call r.check(0, #symbol, rc)?;);
            pointer_fn(direct.len())
        }
    };
    let state = inline.map(|w| workspace::state_static(symbol_prefix, w));
    e.decls = quote! {
        /// The model's entry point, under the private name its C was compiled with (public for
        /// tools that call it themselves).
        #[doc(hidden)]
        pub mod entry {
            unsafe extern "C" {
                #[link_name = #link]
                #decl
            }

            #state
        }
    };
    Ok(e)
}

/// A packed entry: one descriptor static per argument and the `ENTRY` call.
fn packed(
    e: &mut Entry,
    direct: &[&Arg],
    (symbol, f): (&str, &Ident),
    (params, ws): (Placement, u64),
    after_call: &TokenStream,
) {
    let ws_lit = usize_lit(ws as usize);
    let mut handles = Vec::new();
    for arg in direct {
        let (item, described) = arg.descriptor(params);
        e.tables.push(item);
        if described {
            e.on_take.push(arg.describe());
        }
        e.before.push(arg.store());
        let name = arg.ident();
        handles.push(quote!(#name.handle()));
    }
    let doc = format!(
        " The call of `{symbol}`: a packed function taking one `DLTensor` per argument, with {}.",
        match ws {
            0 => "no workspace window".to_string(),
            n => format!("arena {} for TVMBackendAllocWorkspace", bytes(0, n)),
        }
    );
    e.tables.push(quote! {
        #[doc = #doc]
        static ENTRY: ::mlf_runtime::tvm::Call = ::mlf_runtime::tvm::Call::new(#symbol, entry::#f, &[#(#handles),*], ::mlf_runtime::tvm::Scratch { offset: 0, len: #ws_lit });
    });
    let note = comment(format!("Call `{symbol}`."));
    e.call = if after_call.is_empty() {
        quote!(#note r.call(&ENTRY)?;)
    } else {
        quote!(#note let rc = r.call(&ENTRY); #after_call rc?;)
    };
}

/// `r.workspace(0, ws)` under a comment saying what it serves.
fn workspace_window(ws: u64) -> TokenStream {
    let note = comment(match ws {
        0 => "TVMBackendAllocWorkspace has no window: the C carries its own pools.".to_string(),
        n => format!("TVMBackendAllocWorkspace serves arena {}.", bytes(0, n)),
    });
    let w = usize_lit(ws as usize);
    quote!(#note r.workspace(0, #w);)
}

/// What the module adds for constant arrays taken out of the C (nothing without them), and for
/// lazily loaded parameters that the main reads whole (USMP constant pools, or arrays when the
/// main calls no stage hook), their loading before it.
fn array_code(params: ParamCode<'_>, args: &Args, symbol_prefix: &str) -> arrays::ArrayCode {
    let (split, placement) = (params.split(), params.placement());
    let (table, lazy) = (arrays::table(split), placement == Placement::Lazy);
    let mut code = match (split, table) {
        (Some(split), Some(t)) => {
            let hook = !t.steps.is_empty();
            let mut code = arrays::array_code(split, t, placement, symbol_prefix, &args.region.0, hook);
            if hook && placement.reads_in_run() {
                arrays::aot_streaming(split, t, lazy.then_some(&args.region.0[..]), &mut code);
            }
            code
        }
        _ => arrays::ArrayCode::default(),
    };
    if let (Some(split), true) = (split, lazy && table.is_none_or(|t| t.steps.is_empty())) {
        code.statics.push(tvm::param_offsets(&args.region.0));
        let note = comment(
            "The main reads its constants whole: the first run reads every file not loaded yet into its place (later runs read nothing).",
        );
        code.before_call = quote!(#note r.load_missing(source, &PARAMS, &PARAM_OFFSETS, &mut self.state.loaded)?;);
        if let Some(t) = table {
            code.statics.push(arrays::array_binds(split, t, &args.region.0));
            let safety = comment(
                "SAFETY: this `Model` holds `STATE`, which owns the table and `PARAM_REGION`, and no call is running.",
            );
            code.before_call.extend(quote!(#safety unsafe { arrays::TABLE.bind(&PARAM_REGION, &ARRAY_BINDS) };));
        }
    }
    code
}

/// Streamed constant sections of LLVM objects: the main (in an object) reads them all, so each is
/// read before the call to its fixed place in the staging buffer, where its relocations point.
fn object_staging(params: ParamCode<'_>, offsets: &[u64]) -> Vec<TokenStream> {
    let Some(split) = params.split().filter(|_| params.placement() == Placement::Streamed) else { return Vec::new() };
    let n = split.objects.as_ref().map_or(0, |o| o.file_count());
    offsets[..n]
        .iter()
        .enumerate()
        .map(|(k, &off)| {
            let note = comment(format!(
                "Constant section file {k} ({}) to staging {}, where the objects' relocations point.",
                split.files[k].names.join(", "),
                bytes(off, split.files[k].bytes())
            ));
            let (k, o) = (usize_lit(k), lit(off));
            quote!(#note r.stage(source, &PARAMS[#k], #o)?;)
        })
        .collect()
}

/// Generates the module items. `symbol_prefix` is the prefix the model's C symbols were renamed
/// with; `params` says whether the constant pool is read through a `ParamSource`.
pub fn module_tokens(
    desc: &ModelDesc,
    a: &AotExec,
    plan: &AotPlan,
    (symbol_prefix, inline): (&str, Option<&InlineWorkspace>),
    params: ParamCode<'_>,
    stack: Option<&StackFigure>,
    (shared_arena, sections): (Option<&str>, crate::codegen::section::Sections<'_>),
) -> Result<TokenStream> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let args = Args::new(desc, a, plan, params)?;
    let arrays = array_code(params, &args, symbol_prefix);
    let e =
        entry(desc, a, &args, (symbol_prefix, params.placement(), plan.workspace_bytes), (inline, &arrays.after_call))?;
    let mut statics = args.statics.clone();
    if let Some(split) = params.split() {
        let total: u64 = split.files.iter().map(|f| f.bytes()).sum();
        let what = match (&split.arrays, &split.objects) {
            (Some(_), _) => "constants",
            (_, Some(_)) => "constant sections of its LLVM objects",
            _ => "constant pool",
        };
        let doc = format!(" The {what} this model reads from a `ParamSource` ({total} bytes).");
        statics.push(tvm::param_refs(split, &doc));
    }
    statics.extend(arrays.statics);
    let export = tvm::object_region_symbol(params.split(), symbol_prefix);
    let enter = match inline {
        Some(_) => tvm::RunEnter::Inline,
        None => tvm::RunEnter::Session { align: plan.align },
    };
    let api = tvm::param_api(
        params.placement(),
        enter,
        (args.region.1, export, sections.params),
        &args.region.0,
        arrays.after_load,
    );
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
    // Arguments copied or staged before the call.
    let mut prepare: Vec<TokenStream> = args.all().map(Arg::prepare).collect();
    prepare.extend(object_staging(params, &args.region.0));
    let (before, before_call) = (&e.before, &arrays.before_call);
    let (call, on_take) = (&e.call, &e.on_take);
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
        ]
        .into_iter()
        .chain(crate::codegen::stack::stack_consts(stack))
        .collect(),
        output_offsets: plan.outputs.clone(),
        decls: [e.decls.clone()].into_iter().chain(arrays.decls).collect(),
        statics,
        tables: e.tables.clone(),
        params: api,
        state: Vec::new(),
        model_doc,
        on_take: quote!(#(#on_take)*),
        before: quote!(#(#prepare)* #(#before)* #before_call),
        calls: call.clone(),
        safety: SAFETY,
        after: quote!(),
        high_water_doc: "Most workspace bytes `TVMBackendAllocWorkspace` used in the last run (≤ [`WORKSPACE_BYTES`]).",
        shared: skeleton::Shared::new(shared_arena, false)?,
        arena_section: sections.arena,
    })
}
