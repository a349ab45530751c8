//! The body of a graph model's `run()`: every tensor bound to its place, the operator calls in
//! order (with streamed parameters staged before the call that reads them), and the copies into
//! outputs that are inputs or parameters.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::parts::{Kernels, Params, Tensors};
use crate::codegen::render::{blank, comment};
use crate::codegen::tvm::{ParamCode, bytes};
use crate::codegen::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{GraphExec, ModelDesc};
use crate::plan::graph::{GraphPlan, OpCall, Slot};
use crate::plan::params::call_staging;

/// What the statements of `run()` are made from.
pub(super) struct Run<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) g: &'a GraphExec,
    pub(super) plan: &'a GraphPlan,
    pub(super) params: ParamCode<'a>,
    pub(super) tensors: &'a Tensors,
    pub(super) kernels: &'a Kernels,
    pub(super) embedded: &'a Params,
}

impl Run<'_> {
    /// The `DT_…` and `SHAPE_…` of entry `e`.
    fn dtype_shape(&self, e: usize) -> (&proc_macro2::Ident, &proc_macro2::Ident) {
        let graph = &self.g.graph;
        (&self.tensors.dtypes[&graph.dltype[e]], &self.tensors.shapes[&graph.shape[e]])
    }

    /// The binding of entry `e` before the calls (nothing for a streamed parameter, which is
    /// bound before each call that reads it), under a comment saying what and where it is.
    fn bind_one(&self, e: usize) -> Result<TokenStream> {
        let (n, (dt, shape), what) = (self.tensors.slot(e), self.dtype_shape(e), self.tensors.describe(self.g, e));
        let (statement, place) = match self.plan.slots[e] {
            Slot::Unused => return Ok(quote!()),
            Slot::Input { index } => {
                let f = ident(&self.desc.inputs[index].ident);
                (quote!(r.input(#n, &inputs.#f[..], &#shape);), "read in place from the caller's buffer".to_string())
            }
            Slot::Param { index } => match self.params {
                ParamCode::Embedded(_) => {
                    let p = self.embedded.embedded.get(&index).ok_or_else(|| {
                        Error::invalid(format!("parameter {} has no embedded file", self.desc.params[index].name))
                    })?;
                    (quote!(r.constant(#n, &#p.0, &#shape, #dt);), "read in place from the program image".to_string())
                }
                ParamCode::Resident(split) => {
                    let k = split.of_param[index];
                    let (off, len) = (self.embedded.resident_offsets[k], split.files[k].bytes());
                    let (o, b) = (lit(off), lit(len));
                    (
                        quote!(r.param(#n, #o, #b, &#shape, #dt);),
                        format!("at {} of the loaded parameters", bytes(off, len)),
                    )
                }
                ParamCode::Streamed(_) => return Ok(quote!()),
            },
            // Linked parameters are looked up in the C, inside the `unsafe` block.
            Slot::Linked { .. } => return Ok(quote!()),
            Slot::Arena { offset } => {
                let len = self.g.graph.entry_bytes(e);
                let (o, b) = (lit(offset), lit(len));
                (quote!(r.arena(#n, #o, #b, &#shape, #dt);), format!("at arena {}", bytes(offset, len)))
            }
        };
        let note = comment(format!("{}, {place}.", capital(&what)));
        Ok(quote!(#note #statement))
    }

    /// Every tensor bound to its place, then the inputs and parameters the model writes copied
    /// into the arena.
    pub(super) fn bind(&self) -> Result<TokenStream> {
        let mut out = Vec::new();
        for &e in self.tensors.slot.keys() {
            out.push(self.bind_one(e)?);
        }
        for c in &self.plan.copies_in {
            let o = lit(c.offset);
            let (source, what) = match c.from {
                Slot::Input { index } => {
                    let t = &self.desc.inputs[index];
                    let f = ident(&t.ident);
                    (quote!(&inputs.#f[..]), format!("input `{}`", t.name))
                }
                Slot::Param { index } if self.embedded.embedded.contains_key(&index) => {
                    let p = &self.embedded.embedded[&index];
                    (quote!(&#p.0[..]), format!("parameter `{}`", self.desc.params[index].name))
                }
                _ => {
                    return Err(Error::unsupported("a linked or external parameter shares storage with an activation"));
                }
            };
            let note = comment(format!(
                "The model writes over {what}: it starts as a copy at arena {}.",
                bytes(c.offset, c.bytes)
            ));
            out.push(quote!(#note r.copy_in(#o, #source);));
        }
        Ok(quote!(#(#out)*))
    }

    /// The staging of call `c`'s streamed parameters: each file read into the staging buffer,
    /// then the tensors it holds bound there.
    fn stage(&self, c: &OpCall) -> Vec<TokenStream> {
        let ParamCode::Streamed(split) = self.params else { return Vec::new() };
        let mut out = Vec::new();
        for (k, off) in call_staging(c, self.plan, split).0 {
            let file = &split.files[k];
            let (kk, o) = (usize_lit(k), lit(off));
            let note = comment(format!(
                "Read parameter file `{}` ({}) into staging {}.",
                file.id,
                file.names.join(", "),
                bytes(off, file.bytes())
            ));
            out.push(quote!(#note r.stage(source, &PARAMS[#kk], #o)?;));
            for &e in &c.args {
                let Slot::Param { index } = self.plan.slots[e] else { continue };
                if split.of_param[index] != k {
                    continue;
                }
                let (n, (dt, shape), b) = (self.tensors.slot(e), self.dtype_shape(e), lit(self.g.graph.entry_bytes(e)));
                let note = comment(format!("{}, in the staging buffer.", capital(&self.tensors.describe(self.g, e))));
                out.push(quote!(#note r.param(#n, #o, #b, &#shape, #dt);));
            }
        }
        out
    }

    /// The operator calls, each under a comment naming the function, the tensors it reads and
    /// writes and its scratch memory.
    pub(super) fn calls(&self) -> TokenStream {
        let mut out = Vec::new();
        let blank = blank();
        for (e, slot) in self.tensors.slot.iter() {
            if let Slot::Linked { sid, .. } = self.plan.slots[*e] {
                let (n, (dt, shape)) = (usize_lit(*slot as usize), self.dtype_shape(*e));
                let lookup = &self.kernels.ids["_lookup_linked_param"];
                let note = comment(format!(
                    "{}: in the C's read-only data, found by `_lookup_linked_param` (storage id {sid}).",
                    capital(&self.tensors.describe(self.g, *e))
                ));
                let sid = sid as i64;
                out.push(quote!(#note r.linked(#n, kernels::#lookup, #sid, &#shape, #dt)?; #blank));
            }
        }
        for (i, c) in self.plan.calls.iter().enumerate() {
            let stage = self.stage(c);
            let (idx, name, k) =
                (Literal::u16_unsuffixed(i as u16), c.func.as_str(), &self.kernels.ids[c.func.as_str()]);
            let args = c.args.iter().map(|e| Literal::u16_unsuffixed(self.tensors.slot[e]));
            let outputs = self.g.graph.nodes[c.node].num_outputs;
            let (reads, writes) = c.args.split_at(c.args.len() - outputs);
            let list =
                |es: &[usize]| es.iter().map(|e| self.tensors.slot[e].to_string()).collect::<Vec<_>>().join(", ");
            let scratch = match c.scratch {
                (_, 0) => "no scratch memory".to_string(),
                (off, len) => format!("scratch memory at arena {}", bytes(off, len)),
            };
            let plural = |es: &[usize]| if es.len() == 1 { "tensor" } else { "tensors" };
            let note = comment(format!(
                "Call {i}: `{name}` reads {} {} and writes {} {}, with {scratch}.",
                plural(reads),
                list(reads),
                plural(writes),
                list(writes)
            ));
            let (ws_off, ws_len) = (lit(c.scratch.0), lit(c.scratch.1));
            out.push(quote! {
                #(#stage)*
                #note
                r.workspace(#ws_off, #ws_len);
                r.call(#idx, #name, kernels::#k, [#(#args),*])?;
                #blank
            });
        }
        quote!(#(#out)*)
    }

    /// Outputs that are an input or a parameter, copied into their place in the arena.
    pub(super) fn after(&self) -> TokenStream {
        let mut out = Vec::new();
        for (o, t) in self.plan.outputs.iter().zip(&self.desc.outputs) {
            if o.copy_from.is_some() {
                let (n, off, b) = (self.tensors.slot(o.eid), lit(o.offset), lit(t.bytes()));
                let note = comment(format!(
                    "Output `{}` is {}: copy it to arena {}.",
                    t.name,
                    self.tensors.names[o.eid],
                    bytes(o.offset, t.bytes())
                ));
                out.push(quote!(#note r.copy_slot(#n, #off, #b);));
            }
        }
        quote!(#(#out)*)
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
