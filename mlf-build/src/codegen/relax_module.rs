//! The module generated for a Relax export: the same surface as a graph model's (`Model`,
//! typed `Inputs`/`Outputs`, `run`, `ARENA_BYTES`, shared arenas), built on the skeleton TVM
//! modules share ([`super::tvm::module`]). One descriptor static per tensor of the lowered
//! program at its planned place (arena, weight used in place, parameter region or staging
//! buffer; inputs set by each run), one static per kernel call with its `TVMFFIAny` arguments
//! and scratch window; `run()` stores the caller's input pointers and calls the kernels in
//! order through tvm-ffi's safe-call ABI.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::render::comment;
use super::skeleton::{self, Field};
use super::tvm::{self, ParamCode, TvmModule, bytes, region_static};
use super::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{ModelDesc, Placement, RelaxArg, RelaxExec, TensorId, TensorPlace};
use crate::plan::params::sequential;
use crate::plan::relax::RelaxPlan;
use crate::plan::split::Split;
use crate::plan::stack::StackFigure;
use crate::support::names;

/// What the generator needs besides the model and its plan.
#[derive(Clone, Copy, Debug)]
pub struct RelaxCodegen<'a> {
    /// Prefix the kernels' C symbols were renamed with (`mlf_<hash>_`).
    pub symbol_prefix: &'a str,
    /// Where the weights live.
    pub params: ParamCode<'a>,
    /// The stack a run needs, when the C was compiled.
    pub stack: Option<&'a StackFigure>,
    /// The shared arena the module's arena is, if any.
    pub shared_arena: Option<&'a str>,
}

/// The justification written above the generated `unsafe` block.
const SAFETY: &str = "each call passes one of the export's own kernels (declared with tvm-ffi's \
    safe-call signature; its presence was checked when linking) the arguments the Relax program \
    gives it: integers, and descriptors that point at the caller's inputs (stored above), weights \
    or arena storage of exactly the program's shapes and dtypes, which the kernel checks again.";

const TENSOR: &str = "::mlf_runtime::tvm::Tensor";

/// The streamed staging layout: for each call, the weight files it reads with their offsets in
/// the staging buffer; and the buffer's bytes.
fn staging(exec: &RelaxExec, split: &Split, align: u64) -> (Vec<Vec<(usize, u64)>>, u64) {
    let prog = &exec.program;
    let mut most = 0;
    let per_call = prog
        .calls
        .iter()
        .map(|c| {
            let mut files: Vec<usize> = Vec::new();
            for a in &c.args {
                if let RelaxArg::Tensor(t) = a {
                    if let TensorPlace::Weight(w) = prog.tensors[prog.root(*t)].place {
                        let k = split.of_param[w];
                        if !files.contains(&k) {
                            files.push(k);
                        }
                    }
                }
            }
            let (offsets, end) = sequential(files.iter().map(|&k| split.files[k].bytes()), align);
            most = most.max(end);
            files.into_iter().zip(offsets).collect()
        })
        .collect();
    (per_call, most)
}

/// Generates the module items, and the bytes of RAM its external parameters take.
pub fn module_tokens(
    desc: &ModelDesc,
    exec: &RelaxExec,
    plan: &RelaxPlan,
    cg: &RelaxCodegen<'_>,
) -> Result<(TokenStream, u64)> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let prog = &exec.program;
    let align = desc.plan_align();
    let shapes_u64: Vec<Vec<u64>> = prog.tensors.iter().map(|t| t.shape.iter().map(|&d| d as u64).collect()).collect();
    let (mut statics, dtypes) = tvm::dtype_consts(prog.tensors.iter().map(|t| t.dtype));
    let (shape_items, shapes) = tvm::shape_statics(shapes_u64.iter());
    statics.extend(shape_items);

    // The weights: embedded in place, or the references to their files and where they go.
    let mut embedded: BTreeMap<usize, Ident> = BTreeMap::new();
    let (mut resident, mut region, mut stage) = (Vec::new(), 0, (Vec::new(), 0));
    match cg.params {
        ParamCode::Embedded(files) => {
            for (k, p) in desc.params.iter().enumerate() {
                let symbol = files
                    .get(k)
                    .cloned()
                    .flatten()
                    .ok_or_else(|| Error::invalid(format!("weight {} has no embedded file", p.name)))?;
                let id = ident(&format!("PARAM_{}", names::const_ident(&p.name)));
                let doc =
                    format!(" Weight `{}`: {} {:?}, {} bytes, used in place.", p.name, p.dtype, p.shape, p.bytes());
                statics.push(tvm::embedded_param(&id, &symbol, p.bytes(), &doc));
                embedded.insert(k, id);
            }
        }
        ParamCode::Resident(split) | ParamCode::Streamed(split) | ParamCode::Lazy(split) => {
            let files: Vec<String> =
                split.files.iter().map(|f| format!("`{}` = {}", f.id, f.names.join(", "))).collect();
            let doc = format!(
                " The weights this model reads from a `ParamSource` ({} files, {} bytes): {}.",
                split.files.len(),
                split.files.iter().map(|f| f.bytes()).sum::<u64>(),
                files.join("; ")
            );
            statics.push(tvm::param_refs(split, &doc));
            (resident, region) = sequential(split.files.iter().map(|f| f.bytes()), align);
            if cg.params.placement() == Placement::Streamed {
                stage = staging(exec, split, align);
                (resident, region) = (Vec::new(), stage.1);
            }
        }
    }

    // One descriptor per tensor a call passes (streamed weights: one per staging place).
    let used: BTreeSet<TensorId> = prog
        .calls
        .iter()
        .flat_map(|c| c.args.iter())
        .filter_map(|a| if let RelaxArg::Tensor(t) = a { Some(*t) } else { None })
        .collect();
    let tensor: TokenStream = TENSOR.parse().expect("a path");
    let output_offsets = prog
        .outputs
        .iter()
        .map(|&o| plan.offset_of(prog, o).ok_or_else(|| Error::unsupported("an output that is an input or a weight")))
        .collect::<Result<Vec<u64>>>()?;
    let (mut tables, mut on_take, mut before) = (Vec::new(), Vec::new(), Vec::new());
    let name_of = |t: TensorId| ident(&format!("T{t}"));
    for &t in &used {
        let x = &prog.tensors[t];
        let (dt, shape) = (&dtypes[&x.dtype], &shapes[&shapes_u64[t]]);
        let name = name_of(t);
        let what = format!("Tensor {t} ({} {:?})", x.dtype, x.shape);
        let (ty, init, place) = match prog.tensors[prog.root(t)].place {
            TensorPlace::Input(i) => {
                on_take.push(quote!(#name.describe(&#shape, #dt);));
                let f = ident(&desc.inputs[i].ident);
                let note =
                    comment(format!("{what}: input `{}`, the caller's buffer, read in place.", desc.inputs[i].name));
                before.push(quote!(#note r.input(&#name, &inputs.#f[..]);));
                let ty = quote!(::mlf_runtime::tvm::RunTensor);
                (ty.clone(), quote!(#ty::new()), "read in place from the caller's buffer (set by each run)".to_string())
            }
            TensorPlace::Weight(w) => match cg.params {
                ParamCode::Embedded(_) => {
                    let p = &embedded[&w];
                    (
                        tensor.clone(),
                        quote!(#tensor::constant(&#p.0, &#shape, #dt)),
                        format!("weight `{}` in the program image", desc.params[w].name),
                    )
                }
                ParamCode::Resident(split) | ParamCode::Lazy(split) => {
                    let k = split.of_param[w];
                    let o = lit(resident[k]);
                    (
                        tensor.clone(),
                        quote!(#tensor::new(PARAM_REGION.at(#o), &#shape, #dt)),
                        format!(
                            "weight `{}` at {} of the parameter region",
                            desc.params[w].name,
                            bytes(resident[k], split.files[k].bytes())
                        ),
                    )
                }
                ParamCode::Streamed(_) => continue,
            },
            TensorPlace::Storage { .. } | TensorPlace::View(_) => {
                let off =
                    plan.offset_of(prog, t).ok_or_else(|| Error::invalid(format!("tensor {t} has no arena place")))?;
                let o = lit(off);
                (
                    tensor.clone(),
                    quote!(#tensor::new(ARENA.at(#o), &#shape, #dt)),
                    format!("at arena {}", bytes(off, x.bytes)),
                )
            }
        };
        let doc = format!(" {what}, {place}.");
        tables.push(quote! {
            #[doc = #doc]
            static #name: #ty = #init;
        });
    }

    // Streamed weights: a descriptor per (tensor, staging offset).
    let region_id = region_static(cg.params.placement());
    let mut staged: BTreeMap<(TensorId, u64), Ident> = BTreeMap::new();
    if let ParamCode::Streamed(split) = cg.params {
        for (k, c) in prog.calls.iter().enumerate() {
            for a in &c.args {
                let RelaxArg::Tensor(t) = *a else { continue };
                let TensorPlace::Weight(w) = prog.tensors[prog.root(t)].place else { continue };
                let file = split.of_param[w];
                let off = stage.0[k].iter().find(|(f, _)| *f == file).map(|x| x.1).expect("staged");
                if staged.contains_key(&(t, off)) {
                    continue;
                }
                let x = &prog.tensors[t];
                let (dt, shape) = (&dtypes[&x.dtype], &shapes[&shapes_u64[t]]);
                let name = ident(&format!("T{t}_STAGED_{off}"));
                let o = lit(off);
                let doc = format!(
                    " Tensor {t} (weight `{}`), at {} of the staging buffer.",
                    desc.params[w].name,
                    bytes(off, x.bytes)
                );
                tables.push(quote! {
                    #[doc = #doc]
                    static #name: #tensor = #tensor::new(#region_id.at(#o), &#shape, #dt);
                });
                staged.insert((t, off), name);
            }
        }
    }

    // The kernels and the calls.
    let mut kernel_ids: BTreeMap<&str, Ident> = BTreeMap::new();
    let mut decls = Vec::new();
    for k in prog.kernels() {
        let id = ident(&format!("k_{}", names::sanitize(k)));
        let link = format!("{}__tvm_ffi_{k}", cg.symbol_prefix);
        decls.push(quote! {
            #[link_name = #link]
            pub unsafe fn #id(
                handle: *mut ::core::ffi::c_void,
                args: *const ::mlf_runtime::tvm::ffi::TVMFFIAny,
                num_args: i32,
                result: *mut ::mlf_runtime::tvm::ffi::TVMFFIAny,
            ) -> i32;
        });
        kernel_ids.insert(k, id);
    }
    let mut refs = Vec::new();
    for (k, c) in prog.calls.iter().enumerate() {
        let f = &kernel_ids[c.kernel.as_str()];
        let args = c.args.iter().map(|a| match *a {
            RelaxArg::Int(v) => quote!(::mlf_runtime::tvm::ffi::TVMFFIAny::int(#v)),
            RelaxArg::Tensor(t) => match (&prog.tensors[prog.root(t)].place, cg.params) {
                (TensorPlace::Weight(w), ParamCode::Streamed(split)) => {
                    let off = stage.0[k].iter().find(|(f, _)| *f == split.of_param[*w]).map(|x| x.1).expect("staged");
                    let n = &staged[&(t, off)];
                    quote!(#n.any())
                }
                _ => {
                    let n = name_of(t);
                    quote!(#n.any())
                }
            },
        });
        let (scratch_doc, scratch) = match plan.scratch.get(k).copied().flatten() {
            None => ("no scratch memory".to_string(), quote!(::mlf_runtime::tvm::Scratch::NONE)),
            Some((off, len)) => {
                let (o, l) = (usize_lit(off as usize), usize_lit(len as usize));
                (
                    format!("scratch memory at arena {}", bytes(off, len)),
                    quote!(::mlf_runtime::tvm::Scratch { offset: #o, len: #l }),
                )
            }
        };
        let stages: Vec<(usize, u64)> = match cg.params {
            ParamCode::Streamed(_) => stage.0[k].clone(),
            ParamCode::Lazy(split) => {
                let mut v: Vec<(usize, u64)> = Vec::new();
                for a in &c.args {
                    if let RelaxArg::Tensor(t) = a {
                        if let TensorPlace::Weight(w) = prog.tensors[prog.root(*t)].place {
                            let file = split.of_param[w];
                            if !v.iter().any(|x| x.0 == file) {
                                v.push((file, resident[file]));
                            }
                        }
                    }
                }
                v
            }
            _ => Vec::new(),
        };
        let staging = if stages.is_empty() {
            quote!()
        } else {
            let s = stages.iter().map(|&(file, off)| {
                let (f, o) = (lit(file as u64), usize_lit(off as usize));
                quote!(::mlf_runtime::tvm::Stage { file: #f, offset: #o })
            });
            quote!(.staging(&[#(#s),*]))
        };
        let name = &c.kernel;
        let doc =
            format!(" Call {k} (instruction {}): `{name}` with {} arguments, {scratch_doc}.", c.instr, c.args.len());
        let id = ident(&format!("CALL_{k}"));
        let args_id = ident(&format!("ARGS_{k}"));
        let wrapper = ident(&format!("call_{k}"));
        let n_args = usize_lit(c.args.len());
        let args_doc = format!(" The `TVMFFIAny` arguments of call {k}.");
        let wrapper_doc = format!(" Call {k} in the packed signature the runtime calls: `{name}` with [`{args_id}`].");
        tables.push(quote! {
            #[doc = #args_doc]
            static #args_id: ::mlf_runtime::tvm::FfiArgs<#n_args> = ::mlf_runtime::tvm::FfiArgs([#(#args),*]);
            #[doc = #wrapper_doc]
            unsafe extern "C" fn #wrapper(
                _: *mut ::mlf_runtime::tvm::ffi::TVMValue,
                _: *mut ::core::ffi::c_int,
                _: ::core::ffi::c_int,
                _: *mut ::mlf_runtime::tvm::ffi::TVMValue,
                _: *mut ::core::ffi::c_int,
                _: *mut ::core::ffi::c_void,
            ) -> i32 {
                // SAFETY: the export's own kernel (declared from its tvm-ffi signature, present
                // and renamed at build time) with the arguments lowered from its call, whose
                // tensors are descriptors in this module's statics, live for the run.
                unsafe { ::mlf_runtime::tvm::call_ffi(kernels::#f, &#args_id.0) }
            }
            #[doc = #doc]
            static #id: ::mlf_runtime::tvm::Call = ::mlf_runtime::tvm::Call::new(#name, #wrapper, &[], #scratch)#staging;
        });
        refs.push(quote!(&#id));
    }
    let n = usize_lit(refs.len());
    tables.push(quote! {
        /// The kernel calls, in program order.
        #[doc(hidden)]
        pub static CALLS: [&::mlf_runtime::tvm::Call; #n] = [#(#refs),*];
    });
    let (run_calls, what) = match cg.params {
        ParamCode::Streamed(_) => (
            quote!(r.calls_streamed(&CALLS, source, &PARAMS)?;),
            "; before each, the weights it reads are read into the staging buffer",
        ),
        ParamCode::Lazy(_) => (
            quote!(r.calls_lazy(&CALLS, source, &PARAMS, &mut self.state.loaded)?;),
            "; before each, the weights it reads that no earlier run loaded are read into their places",
        ),
        _ => (quote!(r.calls(&CALLS)?;), ""),
    };
    let note = comment(format!("Every kernel, in program order, each with its scratch window{what}."));
    let api = tvm::param_api(cg.params.placement(), align, (region, None), &resident, quote!());
    let tvm_storage = lit(plan.tvm_storage);
    let model_doc = format!(
        " The Relax program `{}` of this export ({} kernel calls, executable version {}). Static RAM: \
         {} bytes of arena (mlf's liveness plan; the liveness bound is {} bytes); TVM's VM would \
         allocate {} bytes of storage.",
        prog.entry,
        prog.calls.len(),
        prog.version,
        plan.arena,
        plan.bound,
        plan.tvm_storage
    );
    let tokens = tvm::module(TvmModule {
        desc,
        arena: plan.arena,
        arena_doc: "Bytes of static RAM this module allocates (its arena: every tensor the program \
                    writes, its outputs and the kernels' scratch memory, planned at build time).",
        consts: [quote! {
            /// Bytes TVM's Relax VM would allocate for this program's storage (the sum of its
            /// `alloc_storage` sizes, each aligned).
            pub const TVM_PLAN_BYTES: usize = #tvm_storage;
        }]
        .into_iter()
        .chain(tvm::stack_consts(cg.stack))
        .collect(),
        output_offsets,
        decls: vec![quote! {
            /// The export's kernels (tvm-ffi safe-call convention), under the private names its
            /// code was compiled with.
            mod kernels {
                unsafe extern "C" {
                    #(#decls)*
                }
            }
        }],
        statics,
        tables,
        params: api,
        state: Vec::<Field>::new(),
        model_doc,
        on_take: quote!(#(#on_take)*),
        before: quote!(#(#before)*),
        calls: quote!(#note #run_calls),
        safety: SAFETY,
        after: quote!(),
        high_water_doc: "Highest arena offset the kernels' workspace reached in the last run (≤ [`ARENA_BYTES`]).",
        shared: skeleton::Shared::new(cg.shared_arena, false)?,
    })?;
    Ok((tokens, region))
}
