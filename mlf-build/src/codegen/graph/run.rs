//! A graph model's tables and `run()`: one descriptor static per tensor at its planned place
//! (inputs and linked parameters filled in by the run, everything else fixed when the module
//! compiles), one static per operator call with its packed arguments and scratch window, and
//! the statements of `run()` around them: store the caller's input pointers, copy what the
//! model writes over, call every operator, copy outputs that are inputs or parameters.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::parts::{Kernels, Params, Tensors};
use crate::codegen::render::{blank, comment};
use crate::codegen::tvm::{ParamCode, bytes, region_static};
use crate::codegen::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{GraphExec, ModelDesc};
use crate::plan::graph::{GraphPlan, OpCall, Slot};
use crate::plan::params::call_staging;

/// What the tables and statements of `run()` are made from.
pub(super) struct Run<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) g: &'a GraphExec,
    pub(super) plan: &'a GraphPlan,
    pub(super) params: ParamCode<'a>,
    pub(super) tensors: &'a Tensors,
    pub(super) kernels: &'a Kernels,
    pub(super) embedded: &'a Params,
}

/// The generated tables and statements.
pub(super) struct Tables {
    /// Descriptor and call statics, and `CALLS`.
    pub(super) items: Vec<TokenStream>,
    /// Descriptors described when the model is taken.
    pub(super) on_take: TokenStream,
    /// Statements before the calls.
    pub(super) before: TokenStream,
    /// The calls (and the first run's lookups of linked parameters).
    pub(super) calls: TokenStream,
    /// Statements after the calls.
    pub(super) after: TokenStream,
    /// Whether the state records that linked parameters were looked up.
    pub(super) linked: bool,
}

const TENSOR: &str = "::mlf_runtime::tvm::Tensor";

impl Run<'_> {
    /// The `DT_…` and `SHAPE_…` of entry `e`.
    fn dtype_shape(&self, e: usize) -> (&Ident, &Ident) {
        let graph = &self.g.graph;
        (&self.tensors.dtypes[&graph.dltype[e]], &self.tensors.shapes[&graph.shape[e]])
    }

    /// `Tensor 3: the result of `f` (float32 [1, 32])` with its first letter in upper case.
    fn what(&self, e: usize) -> String {
        capital(&self.tensors.describe(self.g, e))
    }

    /// The descriptor static of entry `e` (`None` for a streamed parameter, which has one per
    /// staging place, see [`Run::staged`]), documented with what and where it is.
    fn tensor(&self, e: usize, on_take: &mut Vec<TokenStream>) -> Result<Option<TokenStream>> {
        let (name, (dt, shape), what) = (self.tensors.ident(e), self.dtype_shape(e), self.what(e));
        let tensor: TokenStream = TENSOR.parse().expect("a path");
        let run_tensor = |on_take: &mut Vec<TokenStream>| {
            on_take.push(quote!(#name.describe(&#shape, #dt);));
            quote!(::mlf_runtime::tvm::RunTensor)
        };
        let (ty, init, place) = match self.plan.slots[e] {
            Slot::Unused => return Ok(None),
            Slot::Input { .. } => {
                let ty = run_tensor(on_take);
                (ty.clone(), quote!(#ty::new()), "read in place from the caller's buffer (set by each run)".to_string())
            }
            Slot::Param { index } => match self.params {
                ParamCode::Embedded(_) => {
                    let p = self.embedded.embedded.get(&index).ok_or_else(|| {
                        Error::invalid(format!("parameter {} has no embedded file", self.desc.params[index].name))
                    })?;
                    let init = quote!(#tensor::constant(&#p.0, &#shape, #dt));
                    (tensor.clone(), init, "read in place from the program image".to_string())
                }
                ParamCode::Resident(split) | ParamCode::Lazy(split) => {
                    let k = split.of_param[index];
                    let (off, len) = (self.embedded.resident_offsets[k], split.files[k].bytes());
                    let o = lit(off);
                    let init = quote!(#tensor::new(PARAM_REGION.at(#o), &#shape, #dt));
                    let place = match self.params {
                        ParamCode::Lazy(_) => format!(
                            "at {} of the parameter region (read there before the first call that uses it)",
                            bytes(off, len)
                        ),
                        _ => format!("at {} of the loaded parameters", bytes(off, len)),
                    };
                    (tensor.clone(), init, place)
                }
                ParamCode::Streamed(_) => return Ok(None),
            },
            Slot::Linked { sid, .. } => {
                let ty = run_tensor(on_take);
                let place = format!(
                    "in the C's read-only data, found by `_lookup_linked_param` (storage id {sid}) on the first run"
                );
                (ty.clone(), quote!(#ty::new()), place)
            }
            Slot::Arena { offset } => {
                let (o, len) = (lit(offset), self.g.graph.entry_bytes(e));
                (
                    tensor.clone(),
                    quote!(#tensor::new(ARENA.at(#o), &#shape, #dt)),
                    format!("at arena {}", bytes(offset, len)),
                )
            }
        };
        let doc = format!(" {what}, {place}.");
        Ok(Some(quote! {
            #[doc = #doc]
            static #name: #ty = #init;
        }))
    }

    /// The descriptor statics of streamed parameters: one per (entry, staging offset), by entry
    /// and offset.
    fn staged(&self) -> (Vec<TokenStream>, BTreeMap<(usize, u64), Ident>) {
        let (mut items, mut names) = (Vec::new(), BTreeMap::new());
        let ParamCode::Streamed(split) = self.params else { return (items, names) };
        let region = region_static(self.params.placement());
        for c in &self.plan.calls {
            let offsets: BTreeMap<usize, u64> = call_staging(c, self.plan, split).0.into_iter().collect();
            for &e in &c.args {
                let Slot::Param { index } = self.plan.slots[e] else { continue };
                let off = offsets[&split.of_param[index]];
                if names.contains_key(&(e, off)) {
                    continue;
                }
                let name = ident(&format!("{}_STAGED_{off}", self.tensors.ident(e)));
                let ((dt, shape), o) = (self.dtype_shape(e), lit(off));
                let doc =
                    format!(" {}, at {} of the staging buffer.", self.what(e), bytes(off, self.g.graph.entry_bytes(e)));
                items.push(quote! {
                    #[doc = #doc]
                    static #name: ::mlf_runtime::tvm::Tensor = ::mlf_runtime::tvm::Tensor::new(#region.at(#o), &#shape, #dt);
                });
                names.insert((e, off), name);
            }
        }
        (items, names)
    }

    /// The static of call `i`: its function, its arguments' descriptors, its scratch window and
    /// (streamed) the parameter files read before it.
    fn call(&self, i: usize, c: &OpCall, staged: &BTreeMap<(usize, u64), Ident>) -> TokenStream {
        let (name, k) = (c.func.as_str(), &self.kernels.ids[c.func.as_str()]);
        let stage = match self.params {
            ParamCode::Streamed(split) => call_staging(c, self.plan, split).0,
            // The same files, each to its own place in the parameter region.
            ParamCode::Lazy(split) => call_staging(c, self.plan, split)
                .0
                .into_iter()
                .map(|(k, _)| (k, self.embedded.resident_offsets[k]))
                .collect(),
            _ => Vec::new(),
        };
        let offsets: BTreeMap<usize, u64> = stage.iter().copied().collect();
        let args = c.args.iter().map(|&e| match (self.plan.slots[e], self.params) {
            (Slot::Param { index }, ParamCode::Streamed(split)) => {
                let t = &staged[&(e, offsets[&split.of_param[index]])];
                quote!(#t.handle())
            }
            _ => {
                let t = self.tensors.ident(e);
                quote!(#t.handle())
            }
        });
        let outputs = self.g.graph.nodes[c.node].num_outputs;
        let (reads, writes) = c.args.split_at(c.args.len() - outputs);
        let list = |es: &[usize]| es.iter().map(|e| self.tensors.slot[e].to_string()).collect::<Vec<_>>().join(", ");
        let plural = |es: &[usize]| if es.len() == 1 { "tensor" } else { "tensors" };
        let (scratch_doc, scratch) = match c.scratch {
            (_, 0) => ("no scratch memory".to_string(), quote!(::mlf_runtime::tvm::Scratch::NONE)),
            (off, len) => {
                let (o, l) = (usize_lit(off as usize), usize_lit(len as usize));
                (
                    format!("scratch memory at arena {}", bytes(off, len)),
                    quote!(::mlf_runtime::tvm::Scratch { offset: #o, len: #l }),
                )
            }
        };
        let mut doc = format!(
            " Call {i}: `{name}` reads {} {} and writes {} {}, with {scratch_doc}.",
            plural(reads),
            list(reads),
            plural(writes),
            list(writes)
        );
        let staging = if let (Some(split), false) = (self.params.split(), stage.is_empty()) {
            let files: Vec<String> = stage
                .iter()
                .map(|&(k, off)| {
                    format!(
                        "`{}` ({}) at {}",
                        split.files[k].id,
                        split.files[k].names.join(", "),
                        bytes(off, split.files[k].bytes())
                    )
                })
                .collect();
            doc.push_str(&match self.params {
                ParamCode::Lazy(_) => format!(
                    " Before it, parameter files {} are read into the parameter region, unless an earlier call loaded them.",
                    files.join(", ")
                ),
                _ => format!(" Before it, parameter files {} are read into the staging buffer.", files.join(", ")),
            });
            let stages = stage.iter().map(|&(k, off)| {
                let (f, o) = (lit(k as u64), usize_lit(off as usize));
                quote!(::mlf_runtime::tvm::Stage { file: #f, offset: #o })
            });
            quote!(.staging(&[#(#stages),*]))
        } else {
            quote!()
        };
        let id = ident(&format!("CALL_{i}"));
        quote! {
            #[doc = #doc]
            static #id: ::mlf_runtime::tvm::Call = ::mlf_runtime::tvm::Call::new(#name, kernels::#k, &[#(#args),*], #scratch)#staging;
        }
    }

    /// Every table and statement.
    pub(super) fn tables(&self) -> Result<Tables> {
        let (mut items, mut on_take) = (Vec::new(), Vec::new());
        for &e in self.tensors.slot.keys() {
            items.extend(self.tensor(e, &mut on_take)?);
        }
        let (staged_items, staged) = self.staged();
        items.extend(staged_items);
        let mut refs = Vec::new();
        for (i, c) in self.plan.calls.iter().enumerate() {
            items.push(self.call(i, c, &staged));
            let id = ident(&format!("CALL_{i}"));
            refs.push(quote!(&#id));
        }
        let n = usize_lit(refs.len());
        items.push(quote! {
            /// The operator calls, in order (public for tools that call the kernels themselves).
            #[doc(hidden)]
            pub static CALLS: [&::mlf_runtime::tvm::Call; #n] = [#(#refs),*];
        });
        let (linked, lookups) = self.lookups();
        let arrays = crate::codegen::arrays::table(self.params.split()).is_some();
        let loaded = quote!(&mut self.state.loaded);
        const LAZY: &str =
            "; before each, the parameters it uses that no earlier call loaded are read into their places";
        let (run_calls, what) = match self.params {
            ParamCode::Streamed(_) if arrays => {
                (quote!(r.calls_with_arrays(&CALLS, source, &PARAMS, &STEPS, &arrays::TABLE)?;), "")
            }
            ParamCode::Streamed(_) => (quote!(r.calls_streamed(&CALLS, source, &PARAMS)?;), ""),
            ParamCode::Lazy(_) if arrays => {
                (quote!(r.calls_lazy_with_arrays(&CALLS, source, &PARAMS, &STEPS, &arrays::TABLE, #loaded)?;), LAZY)
            }
            ParamCode::Lazy(_) => (quote!(r.calls_lazy(&CALLS, source, &PARAMS, #loaded)?;), LAZY),
            _ => (quote!(r.calls(&CALLS)?;), ""),
        };
        let note = comment(format!("Every operator, in order, each with its scratch window{what}."));
        Ok(Tables {
            items,
            on_take: quote!(#(#on_take)*),
            before: self.before()?,
            calls: quote!(#lookups #note #run_calls),
            after: self.after()?,
            linked,
        })
    }

    /// The table of linked parameters (`LINKED`: each descriptor with its storage id) and the
    /// first run's lookup of them (and whether there are any).
    fn lookups(&self) -> (bool, TokenStream) {
        let mut rows = Vec::new();
        for &e in self.tensors.slot.keys() {
            if let Slot::Linked { sid, .. } = self.plan.slots[e] {
                let (name, sid) = (self.tensors.ident(e), sid as i64);
                rows.push(quote!((&#name, #sid)));
            }
        }
        if rows.is_empty() {
            return (false, quote!());
        }
        let lookup = &self.kernels.ids["_lookup_linked_param"];
        let n = usize_lit(rows.len());
        let (note, blank) = (comment("The first run finds the parameters linked into the C."), blank());
        (
            true,
            quote! {
                #note
                if !self.state.linked {
                    /// The parameters linked into the C: each descriptor with its storage id.
                    static LINKED: [(&::mlf_runtime::tvm::RunTensor, i64); #n] = [#(#rows),*];
                    r.linked(&LINKED, kernels::#lookup)?;
                    self.state.linked = true;
                }
                #blank
            },
        )
    }

    /// The caller's input pointers stored into their descriptors, then the inputs and
    /// parameters the model writes copied into the arena.
    fn before(&self) -> Result<TokenStream> {
        let mut out = Vec::new();
        for &e in self.tensors.slot.keys() {
            if let Slot::Input { index } = self.plan.slots[e] {
                let (name, f) = (self.tensors.ident(e), ident(&self.desc.inputs[index].ident));
                let note = comment(format!("{}: the caller's buffer, read in place.", self.what(e)));
                out.push(quote!(#note r.input(&#name, &inputs.#f[..]);));
            }
        }
        for c in &self.plan.copies_in {
            let o = lit(c.offset);
            let (source, what) = self.copy_source(c.from)?;
            let note = comment(format!(
                "The model writes over {what}: it starts as a copy at arena {}.",
                bytes(c.offset, c.bytes)
            ));
            out.push(quote!(#note r.copy_in(#o, #source);));
        }
        Ok(quote!(#(#out)*))
    }

    /// The slice an input or embedded parameter is copied from, and what it is.
    fn copy_source(&self, from: Slot) -> Result<(TokenStream, String)> {
        match from {
            Slot::Input { index } => {
                let t = &self.desc.inputs[index];
                let f = ident(&t.ident);
                Ok((quote!(&inputs.#f[..]), format!("input `{}`", t.name)))
            }
            Slot::Param { index } if self.embedded.embedded.contains_key(&index) => {
                let p = &self.embedded.embedded[&index];
                Ok((quote!(&#p.0[..]), format!("parameter `{}`", self.desc.params[index].name)))
            }
            _ => Err(Error::unsupported("a linked or external parameter shares storage with an activation")),
        }
    }

    /// Outputs that are an input or a parameter, copied into their place in the arena.
    fn after(&self) -> Result<TokenStream> {
        let mut out = Vec::new();
        for (o, t) in self.plan.outputs.iter().zip(&self.desc.outputs) {
            let Some(from) = o.copy_from else { continue };
            let off = lit(o.offset);
            let note = comment(format!(
                "Output `{}` is {}: copy it to arena {}.",
                t.name,
                self.tensors.names[o.eid],
                bytes(o.offset, t.bytes())
            ));
            let statement = match (from, self.params) {
                (Slot::Param { index }, ParamCode::Resident(split)) => {
                    let k = split.of_param[index];
                    let (src, b) = (lit(self.embedded.resident_offsets[k]), lit(t.bytes()));
                    quote!(r.copy_param(#src, #off, #b);)
                }
                (Slot::Param { index }, ParamCode::Lazy(split)) => {
                    let k = split.of_param[index];
                    let (src, b) = (lit(self.embedded.resident_offsets[k]), lit(t.bytes()));
                    let (file, at) = (lit(k as u64), usize_lit(self.embedded.resident_offsets[k] as usize));
                    let load = quote!(r.load_once(source, &PARAMS, ::mlf_runtime::tvm::Stage { file: #file, offset: #at }, &mut self.state.loaded)?;);
                    quote!(#load r.copy_param(#src, #off, #b);)
                }
                (Slot::Linked { .. }, _) => {
                    let name = self.tensors.ident(o.eid);
                    let safety = comment("SAFETY: the descriptor points at the parameter the C holds.");
                    quote!(#safety unsafe { r.copy_linked(&#name, #off) };)
                }
                (Slot::Param { .. }, ParamCode::Streamed(_)) => {
                    return Err(Error::unsupported("an output that is a streamed parameter"));
                }
                _ => {
                    let (source, _) = self.copy_source(from)?;
                    quote!(r.copy_in(#off, #source);)
                }
            };
            out.push(quote!(#note #statement));
        }
        Ok(quote!(#(#out)*))
    }
}

/// `text` with its first letter in upper case.
fn capital(text: &str) -> String {
    let mut c = text.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
