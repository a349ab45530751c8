//! The arguments of an AOT model's entry point, in the order it takes them: inputs (in place,
//! or copied into the arena for LLVM kernels), outputs and workspace pools in the arena, and the
//! constant pool of a directly called main (loaded or staged), each with what and where it is.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::codegen::render::comment;
use crate::codegen::tvm::{self, ParamCode, bytes, region_static, typed};
use crate::codegen::{ident, lit, usize_lit};
use crate::error::{Error, Result};
use crate::model::{AotExec, ModelDesc, Placement};
use crate::plan::aot::AotPlan;
use crate::plan::params::aot_region;
use crate::support::dtype::DType;

/// Where an argument's data is.
#[derive(Clone, Debug)]
pub(super) enum Place {
    /// The caller's input (its field), in place.
    Input(Ident),
    /// The caller's input copied to `offset` in the arena (LLVM kernels assume 64-byte
    /// alignment).
    InputCopy(Ident, u64),
    /// `offset` in the arena.
    Arena(u64),
    /// `offset` in the parameter region (resident, lazy) or the staging buffer (streamed, read
    /// from `PARAMS[file]` before the call).
    Param { offset: u64, file: usize, staged: bool },
}

/// One argument.
#[derive(Clone, Debug)]
pub(super) struct Arg {
    /// Its position.
    pub(super) n: usize,
    /// `Argument n: …, <where>.`
    pub(super) what: String,
    /// Where its data is.
    pub(super) place: Place,
    /// Its `SHAPE_…` and `DT_…`.
    pub(super) shape: Ident,
    pub(super) dtype: Ident,
}

impl Arg {
    /// The statements that prepare it before the call (a copy into the arena, a staged read).
    pub(super) fn prepare(&self) -> TokenStream {
        match &self.place {
            Place::InputCopy(f, off) => {
                let (o, note) =
                    (lit(*off), comment(format!("Copy input `{f}` into the arena for argument {}.", self.n)));
                quote!(#note r.copy_in(#o, &inputs.#f[..]);)
            }
            Place::Param { offset, file, staged: true } => {
                let (o, k) = (usize_lit(*offset as usize), usize_lit(*file));
                let note = comment(format!("Read `PARAMS[{file}]` into the staging buffer for argument {}.", self.n));
                quote!(#note r.stage(source, &PARAMS[#k], #o)?;)
            }
            _ => quote!(),
        }
    }

    /// Its data pointer, as an expression (`void*` arguments and interface structs).
    pub(super) fn pointer(&self, params: Placement) -> TokenStream {
        match &self.place {
            Place::Input(f) => quote!(::mlf_runtime::tvm::data_ptr(&inputs.#f[..])),
            Place::InputCopy(_, off) | Place::Arena(off) => {
                let o = lit(*off);
                quote!(ARENA.at(#o))
            }
            Place::Param { offset, .. } => {
                let (region, o) = (region_static(params), lit(*offset));
                quote!(#region.at(#o))
            }
        }
    }

    /// Its descriptor static (`ARG_<n>`) for a packed call, and whether the run stores the
    /// caller's pointer into it (then it is described when the model is taken).
    pub(super) fn descriptor(&self, params: Placement) -> (TokenStream, bool) {
        let (name, shape, dt) = (self.ident(), &self.shape, &self.dtype);
        let doc = format!(" {}", self.what);
        if let Place::Input(_) = self.place {
            let item = quote! {
                #[doc = #doc]
                static #name: ::mlf_runtime::tvm::RunTensor = ::mlf_runtime::tvm::RunTensor::new();
            };
            return (item, true);
        }
        let data = self.pointer(params);
        let item = quote! {
            #[doc = #doc]
            static #name: ::mlf_runtime::tvm::Tensor = ::mlf_runtime::tvm::Tensor::new(#data, &#shape, #dt);
        };
        (item, false)
    }

    /// `ARG_<n>`.
    pub(super) fn ident(&self) -> Ident {
        ident(&format!("ARG_{}", self.n))
    }

    /// The statement that stores the caller's pointer into its descriptor, if it is an input
    /// used in place (packed calls).
    pub(super) fn store(&self) -> TokenStream {
        match &self.place {
            Place::Input(f) => {
                let name = self.ident();
                let note = comment(&self.what);
                quote!(#note r.input(&#name, &inputs.#f[..]);)
            }
            _ => quote!(),
        }
    }

    /// `describe` of its descriptor (inputs in place).
    pub(super) fn describe(&self) -> TokenStream {
        let (name, shape, dt) = (self.ident(), &self.shape, &self.dtype);
        quote!(#name.describe(&#shape, #dt);)
    }
}

/// The entry's arguments and the statics and parameter region they need.
pub(super) struct Args {
    /// The inputs.
    pub(super) inputs: Vec<Arg>,
    /// The outputs, then the pools a directly called main takes after them.
    pub(super) outputs: Vec<Arg>,
    /// The workspace pools the C interface takes in its `workspace_pools` struct.
    pub(super) pools: Vec<Arg>,
    /// The `DT_…` and `SHAPE_…` items.
    pub(super) statics: Vec<TokenStream>,
    /// Offsets of the constant pool files in the parameter region, and its bytes.
    pub(super) region: (Vec<u64>, u64),
}

impl Args {
    pub(super) fn new(desc: &ModelDesc, a: &AotExec, plan: &AotPlan, params: ParamCode<'_>) -> Result<Args> {
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
        let region = match params.split() {
            // Resident, lazy or streamed, pools sit one after the other (the only call, the main,
            // reads them all); streamed constant arrays are staged call by call.
            Some(split) => aot_region(split, params.placement(), plan.align),
            None => (Vec::new(), 0),
        };
        let ids = Ids { dtypes: &dtype_ids, shapes: &shape_ids };
        let (inputs, mut outputs, pools) = tensors(desc, plan, &ids);
        let first = inputs.len() + outputs.len() + pools.len();
        let constants = constant_pools(a, params, first, &region.0, &ids)?;
        main_pools(a, plan, &pools, constants, &mut outputs)?;
        Ok(Args { inputs, outputs, pools, statics, region })
    }

    /// Every argument the entry takes, in order (inputs, outputs and a main's pools, then the
    /// C interface's pools).
    pub(super) fn all(&self) -> impl Iterator<Item = &Arg> {
        self.inputs.iter().chain(&self.outputs).chain(&self.pools)
    }
}

/// Inputs, outputs and the pools in the arena.
fn tensors(desc: &ModelDesc, plan: &AotPlan, ids: &Ids<'_>) -> (Vec<Arg>, Vec<Arg>, Vec<Arg>) {
    let mut inputs = Vec::new();
    for (i, t) in desc.inputs.iter().enumerate() {
        let f = ident(&t.ident);
        let what = format!("Argument {i}: input `{}` ({})", t.name, typed(t));
        let (place, where_) = match &plan.input_copies {
            None => (Place::Input(f), "read in place from the caller's buffer".to_string()),
            Some(offsets) => (
                Place::InputCopy(f, offsets[i]),
                format!(
                    "copied to arena {} (the model's LLVM kernels assume 64-byte-aligned data)",
                    bytes(offsets[i], t.bytes())
                ),
            ),
        };
        let (shape, dtype) = (ids.shapes[&t.shape].clone(), ids.dtypes[&t.dtype].clone());
        inputs.push(Arg { n: i, what: format!("{what}, {where_}."), place, shape, dtype });
    }
    let n_in = desc.inputs.len();
    let mut outputs = Vec::new();
    for (k, (t, &off)) in desc.outputs.iter().zip(&plan.outputs).enumerate() {
        let what =
            format!("Argument {}: output `{}` ({}), at arena {}.", n_in + k, t.name, typed(t), bytes(off, t.bytes()));
        let (shape, dtype) = (ids.shapes[&t.shape].clone(), ids.dtypes[&t.dtype].clone());
        outputs.push(Arg { n: n_in + k, what, place: Place::Arena(off), shape, dtype });
    }
    let mut pools = Vec::new();
    for (k, (name, off, len)) in plan.pools.iter().enumerate() {
        let n = n_in + desc.outputs.len() + k;
        let what = format!("Argument {n}: workspace pool `{name}` ({len} bytes), at arena {}.", bytes(*off, *len));
        let (shape, dtype) = (ids.shapes[&vec![*len]].clone(), ids.dtypes[&DType::U8].clone());
        pools.push(Arg { n, what, place: Place::Arena(*off), shape, dtype });
    }
    (inputs, outputs, pools)
}

/// The constant pools of a directly called main, in the parameter region (resident, lazy) or
/// staged before the call (streamed), numbered from `first`.
fn constant_pools(
    a: &AotExec,
    params: ParamCode<'_>,
    first: usize,
    offsets: &[u64],
    ids: &Ids<'_>,
) -> Result<Vec<Arg>> {
    let Some(split) = params.split() else { return Ok(Vec::new()) };
    let mut out = Vec::new();
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
        let (n, off) = (first + k, offsets[k]);
        let staged = params.placement() == Placement::Streamed;
        let where_ = match params.placement() {
            Placement::Streamed => format!("read into staging {} before the call", bytes(off, p.bytes)),
            Placement::Lazy => {
                format!("at {} of the parameter region (read there before the first run's call)", bytes(off, p.bytes))
            }
            _ => format!("at {} of the loaded parameters", bytes(off, p.bytes)),
        };
        let what = format!(
            "Argument {n}: constant pool `{}` ({} bytes, parameter file `{}`), {where_}.",
            p.name, p.bytes, f.id
        );
        let (shape, dtype) = (ids.shapes[&vec![p.bytes]].clone(), ids.dtypes[&DType::U8].clone());
        out.push(Arg { n, what, place: Place::Param { offset: off, file: k, staged }, shape, dtype });
    }
    Ok(out)
}

/// A directly called main takes its pools after the outputs, in its own order.
fn main_pools(a: &AotExec, plan: &AotPlan, pools: &[Arg], constants: Vec<Arg>, outputs: &mut Vec<Arg>) -> Result<()> {
    let mut constants = constants.into_iter();
    for p in &a.main_pools {
        let arg = if p.constant {
            constants.next().ok_or_else(|| Error::invalid(format!("constant pool {} has no place", p.name)))?
        } else {
            let k = plan.pools.iter().position(|(n, _, _)| *n == p.name);
            pools[k.ok_or_else(|| Error::invalid(format!("pool {} has no place", p.name)))?].clone()
        };
        outputs.push(arg);
    }
    Ok(())
}

/// The `DT_…` and `SHAPE_…` items by dtype and shape.
struct Ids<'a> {
    dtypes: &'a BTreeMap<DType, Ident>,
    shapes: &'a BTreeMap<Vec<u64>, Ident>,
}
