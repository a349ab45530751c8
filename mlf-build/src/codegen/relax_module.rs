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
use super::tvm::RunEnter::Session;
use super::tvm::{self, ParamCode, TvmModule, bytes, region_static};
use super::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{ModelDesc, Placement, RelaxArg, RelaxCall, RelaxExec, RelaxProgram, TensorId, TensorPlace};
use crate::plan::params::sequential;
use crate::plan::relax::RelaxPlan;
use crate::plan::split::Split;
use crate::plan::stack::StackFigure;
use crate::support::dtype::DType;
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
    /// The link sections of the arena and the parameters.
    pub sections: super::section::Sections<'a>,
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

/// What the generator builds up: the model, its plan and the items made so far.
struct Gen<'a> {
    desc: &'a ModelDesc,
    prog: &'a RelaxProgram,
    plan: &'a RelaxPlan,
    cg: &'a RelaxCodegen<'a>,
    shapes_u64: Vec<Vec<u64>>,
    dtypes: BTreeMap<DType, Ident>,
    shapes: BTreeMap<Vec<u64>, Ident>,
    /// Statics before the tables (dtypes, shapes, weights).
    statics: Vec<TokenStream>,
    /// Descriptor and call statics.
    tables: Vec<TokenStream>,
    /// Embedded weights: parameter index to its static.
    embedded: BTreeMap<usize, Ident>,
    /// Offsets of the parameter files in the parameter region (resident, lazy).
    resident: Vec<u64>,
    /// Bytes of the parameter region or staging buffer.
    region: u64,
    /// The streamed staging layout ([`staging`]).
    stage: (Vec<Vec<(usize, u64)>>, u64),
    /// Statements of `take()` and of `run()` before the calls.
    on_take: Vec<TokenStream>,
    before: Vec<TokenStream>,
    /// Streamed weights: the descriptor of each (tensor, staging offset).
    staged: BTreeMap<(TensorId, u64), Ident>,
}

fn tensor_path() -> TokenStream {
    TENSOR.parse().expect("a path")
}

impl<'a> Gen<'a> {
    fn new(desc: &'a ModelDesc, prog: &'a RelaxProgram, plan: &'a RelaxPlan, cg: &'a RelaxCodegen<'a>) -> Self {
        let shapes_u64: Vec<Vec<u64>> =
            prog.tensors.iter().map(|t| t.shape.iter().map(|&d| d as u64).collect()).collect();
        let (mut statics, dtypes) = tvm::dtype_consts(prog.tensors.iter().map(|t| t.dtype));
        let (shape_items, shapes) = tvm::shape_statics(shapes_u64.iter());
        statics.extend(shape_items);
        Gen {
            desc,
            prog,
            plan,
            cg,
            shapes_u64,
            dtypes,
            shapes,
            statics,
            tables: Vec::new(),
            embedded: BTreeMap::new(),
            resident: Vec::new(),
            region: 0,
            stage: (Vec::new(), 0),
            on_take: Vec::new(),
            before: Vec::new(),
            staged: BTreeMap::new(),
        }
    }

    /// The weights: embedded in place, or the references to their files and where they go.
    fn weights(&mut self, exec: &RelaxExec) -> Result<()> {
        let (desc, align) = (self.desc, self.desc.plan_align());
        match self.cg.params {
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
                    self.statics.push(tvm::embedded_param(&id, &symbol, p.bytes(), &doc));
                    self.embedded.insert(k, id);
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
                self.statics.push(tvm::param_refs(split, &doc));
                (self.resident, self.region) = sequential(split.files.iter().map(|f| f.bytes()), align);
                if self.cg.params.placement() == Placement::Streamed {
                    self.stage = staging(exec, split, align);
                    (self.resident, self.region) = (Vec::new(), self.stage.1);
                }
            }
        }
        Ok(())
    }

    /// One descriptor per tensor a call passes (streamed weights: see [`Gen::staged_tensors`]).
    fn tensors(&mut self) -> Result<()> {
        let prog = self.prog;
        let used: BTreeSet<TensorId> = prog
            .calls
            .iter()
            .flat_map(|c| c.args.iter())
            .filter_map(|a| if let RelaxArg::Tensor(t) = a { Some(*t) } else { None })
            .collect();
        for &t in &used {
            let x = &prog.tensors[t];
            let name = ident(&format!("T{t}"));
            let what = format!("Tensor {t} ({} {:?})", x.dtype, x.shape);
            let Some((ty, init, place)) = self.tensor(t, &name, &what)? else { continue };
            let doc = format!(" {what}, {place}.");
            self.tables.push(quote! {
                #[doc = #doc]
                static #name: #ty = #init;
            });
        }
        Ok(())
    }

    /// Tensor `t`'s descriptor: its type, initialiser and where it is (`None` for a streamed
    /// weight, which has one descriptor per staging place).
    fn tensor(&mut self, t: TensorId, name: &Ident, what: &str) -> Result<Option<(TokenStream, TokenStream, String)>> {
        let (desc, prog, tensor) = (self.desc, self.prog, tensor_path());
        let x = &prog.tensors[t];
        let (dt, shape) = (&self.dtypes[&x.dtype], &self.shapes[&self.shapes_u64[t]]);
        Ok(Some(match prog.tensors[prog.root(t)].place {
            TensorPlace::Input(i) => {
                self.on_take.push(quote!(#name.describe(&#shape, #dt);));
                let f = ident(&desc.inputs[i].ident);
                let note =
                    comment(format!("{what}: input `{}`, the caller's buffer, read in place.", desc.inputs[i].name));
                self.before.push(quote!(#note r.input(&#name, &inputs.#f[..]);));
                let ty = quote!(::mlf_runtime::tvm::RunTensor);
                (ty.clone(), quote!(#ty::new()), "read in place from the caller's buffer (set by each run)".to_string())
            }
            TensorPlace::Weight(w) => match self.cg.params {
                ParamCode::Embedded(_) => {
                    let p = &self.embedded[&w];
                    (
                        tensor.clone(),
                        quote!(#tensor::constant(&#p.0, &#shape, #dt)),
                        format!("weight `{}` in the program image", desc.params[w].name),
                    )
                }
                ParamCode::Resident(split) | ParamCode::Lazy(split) => {
                    let k = split.of_param[w];
                    let o = lit(self.resident[k]);
                    (
                        tensor.clone(),
                        quote!(#tensor::new(PARAM_REGION.at(#o), &#shape, #dt)),
                        format!(
                            "weight `{}` at {} of the parameter region",
                            desc.params[w].name,
                            bytes(self.resident[k], split.files[k].bytes())
                        ),
                    )
                }
                ParamCode::Streamed(_) => return Ok(None),
            },
            TensorPlace::Storage { .. } | TensorPlace::View(_) | TensorPlace::Copy(_) => {
                let off = self
                    .plan
                    .offset_of(prog, t)
                    .ok_or_else(|| Error::invalid(format!("tensor {t} has no arena place")))?;
                let o = lit(off);
                (
                    tensor.clone(),
                    quote!(#tensor::new(ARENA.at(#o), &#shape, #dt)),
                    format!("at arena {}", bytes(off, x.bytes)),
                )
            }
        }))
    }

    /// The statements after the calls: each output that is an input or a weight
    /// ([`TensorPlace::Copy`]) copied into its buffer in the arena.
    fn copies(&self) -> Result<TokenStream> {
        let (desc, prog) = (self.desc, self.prog);
        let mut out = Vec::new();
        for (t, x) in prog.tensors.iter().enumerate() {
            let TensorPlace::Copy(src) = x.place else { continue };
            let to = self
                .plan
                .offset_of(prog, t)
                .ok_or_else(|| Error::invalid(format!("output tensor {t} has no arena place")))?;
            let (off, len) = (lit(to), lit(x.bytes));
            let (what, statement) = match (&prog.tensors[prog.root(src)].place, self.cg.params) {
                (TensorPlace::Input(i), _) => {
                    let f = ident(&desc.inputs[*i].ident);
                    (format!("input `{}`", desc.inputs[*i].name), quote!(r.copy_in(#off, &inputs.#f[..]);))
                }
                (TensorPlace::Weight(w), ParamCode::Embedded(_)) => {
                    let p = &self.embedded[w];
                    (format!("weight `{}`", desc.params[*w].name), quote!(r.copy_in(#off, &#p.0[..]);))
                }
                (TensorPlace::Weight(w), ParamCode::Resident(split) | ParamCode::Lazy(split)) => {
                    let k = split.of_param[*w];
                    let from = lit(self.resident[k]);
                    let copy = quote!(r.copy_param(#from, #off, #len););
                    let statement = if self.cg.params.placement() == Placement::Lazy {
                        let (file, at) = (lit(k as u64), usize_lit(self.resident[k] as usize));
                        quote! {
                            r.load_once(source, &PARAMS, ::mlf_runtime::tvm::Stage { file: #file, offset: #at }, &mut self.state.loaded)?;
                            #copy
                        }
                    } else {
                        copy
                    };
                    (format!("weight `{}`", desc.params[*w].name), statement)
                }
                (TensorPlace::Weight(w), ParamCode::Streamed(_)) => {
                    return Err(Error::unsupported(format!(
                        "output {t} is weight `{}`, which streamed weights never hold in memory after the call that \
                         reads it: use params = \"resident\" or \"lazy\"",
                        desc.params[*w].name
                    )));
                }
                (other, _) => return Err(Error::invalid(format!("output tensor {t} copies {other:?}"))),
            };
            let note = comment(format!("An output that is {what}: copied to arena {}.", bytes(to, x.bytes)));
            out.push(quote!(#note #statement));
        }
        Ok(quote!(#(#out)*))
    }

    /// Where call `k` stages the weights of file `file` (streamed).
    fn staged_at(&self, k: usize, file: usize) -> u64 {
        self.stage.0[k].iter().find(|(f, _)| *f == file).map(|x| x.1).expect("staged")
    }

    /// Streamed weights: a descriptor per (tensor, staging offset).
    fn staged_tensors(&mut self) {
        let ParamCode::Streamed(split) = self.cg.params else { return };
        let (prog, tensor) = (self.prog, tensor_path());
        let region_id = region_static(self.cg.params.placement());
        for (k, c) in prog.calls.iter().enumerate() {
            for a in &c.args {
                let RelaxArg::Tensor(t) = *a else { continue };
                let TensorPlace::Weight(w) = prog.tensors[prog.root(t)].place else { continue };
                let off = self.staged_at(k, split.of_param[w]);
                if self.staged.contains_key(&(t, off)) {
                    continue;
                }
                let x = &prog.tensors[t];
                let (dt, shape) = (&self.dtypes[&x.dtype], &self.shapes[&self.shapes_u64[t]]);
                let name = ident(&format!("T{t}_STAGED_{off}"));
                let o = lit(off);
                let doc = format!(
                    " Tensor {t} (weight `{}`), at {} of the staging buffer.",
                    self.desc.params[w].name,
                    bytes(off, x.bytes)
                );
                self.tables.push(quote! {
                    #[doc = #doc]
                    static #name: #tensor = #tensor::new(#region_id.at(#o), &#shape, #dt);
                });
                self.staged.insert((t, off), name);
            }
        }
    }

    /// The declarations of the kernels, and the identifier of each.
    fn kernels(&self) -> (Vec<TokenStream>, BTreeMap<&'a str, Ident>) {
        let mut kernel_ids = BTreeMap::new();
        let mut decls = Vec::new();
        for k in self.prog.kernels() {
            let id = ident(&format!("k_{}", names::sanitize(k)));
            let link = format!("{}__tvm_ffi_{k}", self.cg.symbol_prefix);
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
        (decls, kernel_ids)
    }

    /// The parameter files call `k` reads and where they go (streamed: the staging buffer;
    /// lazy: their places in the parameter region; otherwise none).
    fn stages(&self, k: usize, c: &RelaxCall) -> Vec<(usize, u64)> {
        match self.cg.params {
            ParamCode::Streamed(_) => self.stage.0[k].clone(),
            ParamCode::Lazy(split) => {
                let mut v: Vec<(usize, u64)> = Vec::new();
                for a in &c.args {
                    if let RelaxArg::Tensor(t) = a {
                        if let TensorPlace::Weight(w) = self.prog.tensors[self.prog.root(*t)].place {
                            let file = split.of_param[w];
                            if !v.iter().any(|x| x.0 == file) {
                                v.push((file, self.resident[file]));
                            }
                        }
                    }
                }
                v
            }
            _ => Vec::new(),
        }
    }

    /// Call `k`'s arguments, packed-signature wrapper and `Call` static; returns the static.
    fn call(&mut self, k: usize, c: &RelaxCall, f: &Ident) -> Ident {
        let args: Vec<TokenStream> = c
            .args
            .iter()
            .map(|a| match *a {
                RelaxArg::Int(v) => quote!(::mlf_runtime::tvm::ffi::TVMFFIAny::int(#v)),
                RelaxArg::Tensor(t) => match (&self.prog.tensors[self.prog.root(t)].place, self.cg.params) {
                    (TensorPlace::Weight(w), ParamCode::Streamed(split)) => {
                        let n = &self.staged[&(t, self.staged_at(k, split.of_param[*w]))];
                        quote!(#n.any())
                    }
                    _ => {
                        let n = ident(&format!("T{t}"));
                        quote!(#n.any())
                    }
                },
            })
            .collect();
        let (scratch_doc, scratch) = match self.plan.scratch.get(k).copied().flatten() {
            None => ("no scratch memory".to_string(), quote!(::mlf_runtime::tvm::Scratch::NONE)),
            Some((off, len)) => {
                let (o, l) = (usize_lit(off as usize), usize_lit(len as usize));
                (
                    format!("scratch memory at arena {}", bytes(off, len)),
                    quote!(::mlf_runtime::tvm::Scratch { offset: #o, len: #l }),
                )
            }
        };
        let stages = self.stages(k, c);
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
        let (id, args_id, wrapper) =
            (ident(&format!("CALL_{k}")), ident(&format!("ARGS_{k}")), ident(&format!("call_{k}")));
        let n_args = usize_lit(c.args.len());
        let args_doc = format!(" The `TVMFFIAny` arguments of call {k}.");
        let wrapper_doc = format!(" Call {k} in the packed signature the runtime calls: `{name}` with [`{args_id}`].");
        self.tables.push(quote! {
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
        id
    }
}

/// The statement of `run()` that calls the kernels, and what it does before each call.
fn run_calls(params: ParamCode<'_>) -> (TokenStream, &'static str) {
    match params {
        ParamCode::Streamed(_) => (
            quote!(r.calls_streamed(&CALLS, source, &PARAMS)?;),
            "; before each, the weights it reads are read into the staging buffer",
        ),
        ParamCode::Lazy(_) => (
            quote!(r.calls_lazy(&CALLS, source, &PARAMS, &mut self.state.loaded)?;),
            "; before each, the weights it reads that no earlier run loaded are read into their places",
        ),
        _ => (quote!(r.calls(&CALLS)?;), ""),
    }
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
    let output_offsets = prog
        .outputs
        .iter()
        .map(|&o| plan.offset_of(prog, o).ok_or_else(|| Error::unsupported("an output that is an input or a weight")))
        .collect::<Result<Vec<u64>>>()?;
    let mut g = Gen::new(desc, prog, plan, cg);
    g.weights(exec)?;
    g.tensors()?;
    g.staged_tensors();
    let (decls, kernel_ids) = g.kernels();
    let call_ref = |(k, c): (usize, &RelaxCall)| {
        let id = g.call(k, c, &kernel_ids[c.kernel.as_str()]);
        quote!(&#id)
    };
    let refs: Vec<TokenStream> = prog.calls.iter().enumerate().map(call_ref).collect();
    let n = usize_lit(refs.len());
    g.tables.push(quote! {
        /// The kernel calls, in program order.
        #[doc(hidden)]
        pub static CALLS: [&::mlf_runtime::tvm::Call; #n] = [#(#refs),*];
    });
    let (run_calls, what) = run_calls(cg.params);
    let note = comment(format!("Every kernel, in program order, each with its scratch window{what}."));
    let api = tvm::param_api(
        cg.params.placement(),
        Session { align },
        (g.region, None, cg.sections.params),
        &g.resident,
        quote!(),
    );
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
    let (on_take, before) = (&g.on_take, &g.before);
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
        .chain(super::stack::stack_consts(cg.stack))
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
        statics: g.statics.clone(),
        tables: g.tables.clone(),
        params: api,
        state: Vec::<Field>::new(),
        model_doc,
        on_take: quote!(#(#on_take)*),
        before: quote!(#(#before)*),
        calls: quote!(#note #run_calls),
        safety: SAFETY,
        after: g.copies()?,
        high_water_doc: "Highest arena offset the kernels' workspace reached in the last run (≤ [`ARENA_BYTES`]).",
        shared: skeleton::Shared::new(cg.shared_arena, false)?,
        arena_section: cg.sections.arena,
    })?;
    Ok((tokens, g.region))
}
