//! The arguments of an AOT model's entry point, in the order it takes them: inputs (in place,
//! or copied into the arena for LLVM kernels), outputs and workspace pools in the arena, and the
//! constant pool of a directly called main (loaded or staged), each bound under a comment.

use std::collections::BTreeMap;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

use crate::codegen::render::comment;
use crate::codegen::tvm::{self, ParamCode, bytes, typed};
use crate::codegen::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{AotExec, ModelDesc, Placement};
use crate::plan::aot::AotPlan;
use crate::plan::params::sequential;
use crate::support::dtype::DType;

/// The entry's arguments: their bindings, slot numbers, and the statics and parameter region
/// they need.
pub(super) struct Args {
    /// The statements binding every argument, in slot order.
    pub(super) bind: Vec<TokenStream>,
    /// Slots of the inputs.
    pub(super) inputs: Vec<Literal>,
    /// Slots of the outputs, then of the pools a directly called main takes after them.
    pub(super) outputs: Vec<Literal>,
    /// Slots of the workspace pools the C interface takes in its `workspace_pools` struct.
    pub(super) pools: Vec<Literal>,
    /// How many slots the run binds.
    pub(super) count: usize,
    /// The `DT_…` and `SHAPE_…` items.
    pub(super) statics: Vec<TokenStream>,
    /// Offsets of the constant pool files in the parameter region, and its bytes.
    pub(super) region: (Vec<u64>, u64),
}

impl Args {
    pub(super) fn new(desc: &ModelDesc, a: &AotExec, plan: &AotPlan, params: ParamCode<'_>) -> Result<Args> {
        let (n_in, n_out, n_pools) = (desc.inputs.len(), desc.outputs.len(), plan.pools.len());
        let n_const = a.main_pools.iter().filter(|p| p.constant).count();
        if n_const > 0 && params.split().is_none() {
            return Err(Error::invalid("the main takes a constant pool but no external parameters were given"));
        }
        let mut shapes: Vec<Vec<u64>> = desc.inputs.iter().chain(&desc.outputs).map(|t| t.shape.clone()).collect();
        shapes.extend(plan.pools.iter().map(|(_, _, b)| vec![*b]));
        shapes.extend(a.main_pools.iter().map(|p| vec![p.bytes]));
        let (mut statics, shape_ids) = tvm::shape_statics(shapes.iter());
        let dtypes = desc.inputs.iter().chain(&desc.outputs).map(|t| t.dtype).chain([DType::U8]);
        let (dtype_items, dtype_ids) = tvm::dtype_consts(dtypes);
        statics.splice(0..0, dtype_items);
        let mut args = Args {
            bind: Vec::new(),
            inputs: (0..n_in).map(slot).collect(),
            outputs: (n_in..n_in + n_out).map(slot).collect(),
            pools: (n_in + n_out..n_in + n_out + n_pools).map(slot).collect(),
            count: n_in + n_out + n_pools + n_const,
            statics,
            // Resident or streamed, the pools sit one after the other: the only call (the main)
            // reads them all, so streaming stages them all before it.
            region: match params.split() {
                Some(split) => sequential(split.files.iter().map(|f| f.bytes()), plan.align),
                None => (Vec::new(), 0),
            },
        };
        let ids = Ids { dtypes: &dtype_ids, shapes: &shape_ids };
        args.bind_tensors(desc, plan, &ids);
        let const_slots = args.bind_constant_pools(a, params, n_in + n_out + n_pools, &ids)?;
        args.main_pools(a, plan, n_in + n_out, const_slots)?;
        Ok(args)
    }

    /// Inputs, outputs and the pools in the arena.
    fn bind_tensors(&mut self, desc: &ModelDesc, plan: &AotPlan, ids: &Ids<'_>) {
        for (i, t) in desc.inputs.iter().enumerate() {
            let (f, shape, n) = (ident(&t.ident), &ids.shapes[&t.shape], usize_lit(i));
            let what = format!("Argument {i}: input `{}` ({})", t.name, typed(t));
            self.bind.push(match &plan.input_copies {
                None => {
                    let note = comment(format!("{what}, read in place from the caller's buffer."));
                    quote!(#note r.input(#n, &inputs.#f[..], &#shape);)
                }
                Some(offsets) => {
                    let (o, b, dt) = (lit(offsets[i]), lit(t.bytes()), &ids.dtypes[&t.dtype]);
                    let note = comment(format!(
                        "{what}, copied to arena {} (the model's LLVM kernels assume 64-byte-aligned data).",
                        bytes(offsets[i], t.bytes())
                    ));
                    quote!(#note r.copy_in(#o, &inputs.#f[..]); r.arena(#n, #o, #b, &#shape, #dt);)
                }
            });
        }
        let n_in = desc.inputs.len();
        for (k, (t, &off)) in desc.outputs.iter().zip(&plan.outputs).enumerate() {
            let (n, shape, dt, o, b) =
                (usize_lit(n_in + k), &ids.shapes[&t.shape], &ids.dtypes[&t.dtype], lit(off), lit(t.bytes()));
            let note = comment(format!(
                "Argument {}: output `{}` ({}), at arena {}.",
                n_in + k,
                t.name,
                typed(t),
                bytes(off, t.bytes())
            ));
            self.bind.push(quote!(#note r.arena(#n, #o, #b, &#shape, #dt);));
        }
        for (k, (name, off, len)) in plan.pools.iter().enumerate() {
            let slot = n_in + desc.outputs.len() + k;
            let (n, shape, dt, o, b) =
                (usize_lit(slot), &ids.shapes[&vec![*len]], &ids.dtypes[&DType::U8], lit(*off), lit(*len));
            let note = comment(format!(
                "Argument {slot}: workspace pool `{name}` ({len} bytes), at arena {}.",
                bytes(*off, *len)
            ));
            self.bind.push(quote!(#note r.arena(#n, #o, #b, &#shape, #dt);));
        }
    }

    /// The constant pools of a directly called main, in the parameter region (resident) or
    /// staged before the call (streamed); returns their slots.
    fn bind_constant_pools(
        &mut self,
        a: &AotExec,
        params: ParamCode<'_>,
        first: usize,
        ids: &Ids<'_>,
    ) -> Result<Vec<usize>> {
        let Some(split) = params.split() else { return Ok(Vec::new()) };
        let mut slots = Vec::new();
        for (k, p) in a.main_pools.iter().filter(|p| p.constant).enumerate() {
            let f = &split.files[k];
            if f.bytes() != p.bytes {
                return Err(Error::mismatch(format!(
                    "constant pool {} is {} bytes but its file holds {}",
                    p.name,
                    p.bytes,
                    f.bytes()
                )));
            }
            let (slot, off) = (first + k, self.region.0[k]);
            let (n, o, b, kk) = (usize_lit(slot), lit(off), lit(p.bytes), usize_lit(k));
            let (shape, dt) = (&ids.shapes[&vec![p.bytes]], &ids.dtypes[&DType::U8]);
            let what =
                format!("Argument {slot}: constant pool `{}` ({} bytes, parameter file `{}`)", p.name, p.bytes, f.id);
            if params.placement() == Placement::Streamed {
                let note = comment(format!("{what}, read into staging {}.", bytes(off, p.bytes)));
                self.bind.push(quote!(#note r.stage(source, &PARAMS[#kk], #o)?; r.param(#n, #o, #b, &#shape, #dt);));
            } else {
                let note = comment(format!("{what}, at {} of the loaded parameters.", bytes(off, p.bytes)));
                self.bind.push(quote!(#note r.param(#n, #o, #b, &#shape, #dt);));
            }
            slots.push(slot);
        }
        Ok(slots)
    }

    /// A directly called main takes its pools after the outputs, in its own order.
    fn main_pools(&mut self, a: &AotExec, plan: &AotPlan, first_pool: usize, const_slots: Vec<usize>) -> Result<()> {
        let mut constants = const_slots.into_iter();
        for p in &a.main_pools {
            let s = if p.constant {
                constants.next().ok_or_else(|| Error::invalid(format!("constant pool {} has no place", p.name)))?
            } else {
                let k = plan.pools.iter().position(|(n, _, _)| *n == p.name);
                first_pool + k.ok_or_else(|| Error::invalid(format!("pool {} has no place", p.name)))?
            };
            self.outputs.push(slot(s));
        }
        Ok(())
    }
}

/// The `DT_…` and `SHAPE_…` items by dtype and shape.
struct Ids<'a> {
    dtypes: &'a BTreeMap<DType, Ident>,
    shapes: &'a BTreeMap<Vec<u64>, Ident>,
}

/// A slot number as a `u16` literal.
fn slot(n: usize) -> Literal {
    Literal::u16_unsuffixed(n as u16)
}
