//! Pieces every generated model module shares: the name and shape constants, the typed
//! `Inputs`/`Outputs` structs, the static state cell and `Model::take()`.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::ident;
use crate::error::{Context, Result};
use crate::model::{ModelDesc, Placement, TensorInfo};
use crate::plan::split::Split;
use crate::support::dtype::DType;
use crate::support::names;

/// The Rust element type of a tensor, or an error naming it.
pub fn elem_type(t: &TensorInfo) -> Result<TokenStream> {
    let ty = t.dtype.require_rust_type().at(format!("tensor {}", t.name))?;
    let id = ident(ty);
    Ok(quote!(#id))
}

/// `usize` literal.
pub fn lit(n: u64) -> Literal {
    Literal::u64_unsuffixed(n)
}

/// `NAME`, one `<IDENT>_SHAPE` per input and output, and the `Inputs`/`Outputs` structs.
pub fn interface(desc: &ModelDesc) -> Result<TokenStream> {
    let name = &desc.name;
    let mut consts = Vec::new();
    for (kind, ts) in [("input", &desc.inputs), ("output", &desc.outputs)] {
        for t in ts {
            let c = ident(&format!("{}_SHAPE", names::const_ident(&t.ident)));
            let dims = t.shape.iter().map(|&d| Literal::usize_unsuffixed(d as usize));
            let rank = super::usize_lit(t.shape.len());
            let doc = format!(
                " Shape of {kind} `{}` ({}, raw name `{}`; shape from {}).",
                t.ident, t.dtype, t.name, t.shape_source
            );
            consts.push(quote! {
                #[doc = #doc]
                pub const #c: [usize; #rank] = [#(#dims),*];
            });
        }
    }
    let fields = |ts: &[TensorInfo], what: &str| -> Result<Vec<TokenStream>> {
        ts.iter()
            .map(|t| {
                let f = ident(&t.ident);
                let ty = elem_type(t)?;
                let n = lit(t.numel());
                let doc = format!(" {what} `{}`: {} {:?}, flattened row-major.", t.name, t.dtype, t.shape);
                Ok(quote! {
                    #[doc = #doc]
                    pub #f: &'a [#ty; #n]
                })
            })
            .collect()
    };
    let in_fields = fields(&desc.inputs, "Input")?;
    let out_fields = fields(&desc.outputs, "Output")?;
    Ok(quote! {
        /// The model's name as the compiler recorded it.
        pub const NAME: &str = #name;
        #(#consts)*

        /// The model's inputs, borrowed for one run.
        #[derive(Clone, Copy, Debug)]
        pub struct Inputs<'a> {
            #(#in_fields,)*
        }

        /// The model's outputs, borrowed from the model's static memory until the next run.
        #[derive(Clone, Copy, Debug)]
        pub struct Outputs<'a> {
            #(#out_fields,)*
        }
    })
}

/// `const NAME: DLDataType` items for the dtypes in `dtypes`, and a map from dtype to the item.
pub fn dtype_consts(dtypes: impl IntoIterator<Item = DType>) -> (TokenStream, BTreeMap<DType, proc_macro2::Ident>) {
    let mut map = BTreeMap::new();
    let mut items = Vec::new();
    for d in dtypes {
        if map.contains_key(&d) {
            continue;
        }
        let id = ident(&format!("DT_{}", d.to_string().to_ascii_uppercase()));
        let code = proc_macro2::Literal::u8_unsuffixed(d.code.code());
        let bits = proc_macro2::Literal::u8_unsuffixed(d.bits);
        let lanes = proc_macro2::Literal::u16_unsuffixed(d.lanes);
        items.push(quote! {
            const #id: ::mlf_runtime::tvm::ffi::DLDataType = ::mlf_runtime::tvm::ffi::DLDataType { code: #code, bits: #bits, lanes: #lanes };
        });
        map.insert(d, id);
    }
    (quote!(#(#items)*), map)
}

/// `static SHAPE_…: [i64; N]` items for the shapes in `shapes`, and a map from shape to item.
pub fn shape_statics<'a>(
    shapes: impl IntoIterator<Item = &'a Vec<u64>>,
) -> (TokenStream, BTreeMap<Vec<u64>, proc_macro2::Ident>) {
    let mut map = BTreeMap::new();
    let mut items = Vec::new();
    for s in shapes {
        if map.contains_key(s) {
            continue;
        }
        let name = if s.is_empty() {
            "SHAPE_SCALAR".to_string()
        } else {
            format!("SHAPE_{}", s.iter().map(u64::to_string).collect::<Vec<_>>().join("_"))
        };
        let id = ident(&name);
        let n = super::usize_lit(s.len());
        let dims = s.iter().map(|&d| Literal::i64_unsuffixed(d as i64));
        items.push(quote!(static #id: [i64; #n] = [#(#dims),*];));
        map.insert(s.clone(), id);
    }
    (quote!(#(#items)*), map)
}

/// The embedded copy of parameter bytes: `static P<k>: Aligned<N> = Aligned(*include_bytes!(…))`.
pub fn embedded_param(ident_name: &proc_macro2::Ident, path: &str, bytes: u64, doc: &str) -> TokenStream {
    let p = path;
    let n = lit(bytes);
    quote! {
        #[doc = #doc]
        static #ident_name: ::mlf_runtime::Aligned<#n> = ::mlf_runtime::Aligned(*include_bytes!(#p));
    }
}

/// How a TVM model's generated `Model` holds its parameters: nothing extra (embedded), a static
/// region filled once by `load` (resident), or a staging buffer filled before each call
/// (streamed). Shared by the graph and AOT generators.
pub struct ParamApi {
    /// Constants describing the region (`PARAM_BYTES`/`PARAM_OFFSETS` or `STAGING_BYTES`).
    pub consts: TokenStream,
    /// Extra fields of `State`.
    pub state_fields: TokenStream,
    /// Their initial values.
    pub state_init: TokenStream,
    /// The expression that starts the run.
    pub enter: TokenStream,
    /// `load` (resident only).
    pub load_fn: TokenStream,
    /// The signature of `run`.
    pub run_sig: TokenStream,
    /// The check at the start of `run` (resident only).
    pub check_loaded: TokenStream,
}

/// Where a generated module finds its parameters.
#[derive(Clone, Copy, Debug)]
pub enum ParamCode<'a> {
    /// In the program image: for each parameter of the model (by index), the path
    /// `include_bytes!` reads its aligned file from, or `None` when the C already holds it.
    Embedded(&'a [Option<String>]),
    /// Loaded once from these files into a static region (`Model::load`).
    Resident(&'a Split),
    /// Read from these files just before each call that uses them.
    Streamed(&'a Split),
}

impl<'a> ParamCode<'a> {
    /// The placement this is the code of.
    pub fn placement(&self) -> Placement {
        match self {
            ParamCode::Embedded(_) => Placement::Embedded,
            ParamCode::Resident(_) => Placement::Resident,
            ParamCode::Streamed(_) => Placement::Streamed,
        }
    }

    /// The parameter files of external parameters.
    pub fn split(&self) -> Option<&'a Split> {
        match *self {
            ParamCode::Embedded(_) => None,
            ParamCode::Resident(s) | ParamCode::Streamed(s) => Some(s),
        }
    }
}

/// The [`ParamApi`] for `placement`. `region` is the resident region or the
/// staging buffer in bytes; `offsets` the resident offset of each entry of `PARAMS`.
pub fn param_api(placement: Placement, n_slots: &Literal, align: u64, region: u64, offsets: &[u64]) -> ParamApi {
    let align = lit(align);
    let region = lit(region);
    let embedded_sig = quote!(pub fn run(&mut self, inputs: &Inputs<'_>) -> Result<Outputs<'_>, ::mlf_runtime::Error>);
    match placement {
        Placement::Embedded => ParamApi {
            consts: quote!(),
            state_fields: quote!(),
            state_init: quote!(),
            enter: quote!(::mlf_runtime::tvm::Run::<#n_slots>::enter(&mut state.arena.0, #align)?),
            load_fn: quote!(),
            run_sig: embedded_sig,
            check_loaded: quote!(),
        },
        Placement::Resident => {
            let offs = offsets.iter().map(|&o| lit(o));
            let n = super::usize_lit(offsets.len());
            ParamApi {
                consts: quote! {
                    /// Bytes of static RAM holding the parameters once loaded (resident placement).
                    pub const PARAM_BYTES: usize = #region;
                    const PARAM_OFFSETS: [usize; #n] = [#(#offs),*];
                },
                state_fields: quote!(params: ::mlf_runtime::Arena<#region>, loaded: bool,),
                state_init: quote!(params: ::mlf_runtime::Arena::new(), loaded: false,),
                enter: quote!(::mlf_runtime::tvm::Run::<#n_slots>::enter_with_params(&mut state.arena.0, &mut state.params.0, #align)?),
                load_fn: quote! {
                    /// Loads every parameter from `source` into the model's static parameter region,
                    /// checking sizes and hashes. Call once before [`Model::run`].
                    pub fn load(&mut self, source: &mut dyn ::mlf_runtime::params::ParamSource) -> Result<(), ::mlf_runtime::Error> {
                        let state = &mut *self.state;
                        state.loaded = false;
                        for (p, &offset) in PARAMS.iter().zip(PARAM_OFFSETS.iter()) {
                            source.load(p, &mut state.params.0[offset..offset + p.bytes])?;
                        }
                        state.loaded = true;
                        Ok(())
                    }
                },
                run_sig: embedded_sig,
                check_loaded: quote! {
                    if !state.loaded {
                        return Err(::mlf_runtime::params::ParamError::new(::mlf_runtime::params::ParamErrorKind::NotLoaded, "", "").into());
                    }
                },
            }
        }
        Placement::Streamed => ParamApi {
            consts: quote! {
                /// Bytes of the staging buffer parameters are streamed through: the largest number
                /// of parameter bytes one call reads.
                pub const STAGING_BYTES: usize = #region;
            },
            state_fields: quote!(staging: ::mlf_runtime::Arena<#region>,),
            state_init: quote!(staging: ::mlf_runtime::Arena::new(),),
            enter: quote!(::mlf_runtime::tvm::Run::<#n_slots>::enter_with_params(&mut state.arena.0, &mut state.staging.0, #align)?),
            load_fn: quote!(),
            run_sig: quote! {
                /// Reads each call's parameters from `source` just before the call.
                pub fn run(&mut self, inputs: &Inputs<'_>, source: &mut dyn ::mlf_runtime::params::ParamSource) -> Result<Outputs<'_>, ::mlf_runtime::Error>
            },
            check_loaded: quote!(),
        },
    }
}

/// The embedded references to external parameter files: `pub static PARAMS: [ParamRef; N]`
/// (identifier, size, hash of each file), documented with `doc`.
pub fn param_refs(split: &Split, doc: &str) -> TokenStream {
    let refs = split.files.iter().map(|f| {
        let (id, bytes, hash) = (&f.id, lit(f.bytes()), Literal::u64_unsuffixed(f.xxh64));
        quote!(::mlf_runtime::params::ParamRef { id: #id, bytes: #bytes, xxh64: #hash })
    });
    let n = super::usize_lit(split.files.len());
    quote! {
        #[doc = #doc]
        pub static PARAMS: [::mlf_runtime::params::ParamRef; #n] = [#(#refs),*];
    }
}

/// The declaration of a packed C function `name` (TVM's `TVMBackendPackedCFunc` signature).
pub fn packed_fn_decl(name: &proc_macro2::Ident) -> TokenStream {
    quote! {
        pub fn #name(
            args: *mut ::mlf_runtime::tvm::ffi::TVMValue,
            type_codes: *mut ::core::ffi::c_int,
            num_args: ::core::ffi::c_int,
            out_ret_value: *mut ::mlf_runtime::tvm::ffi::TVMValue,
            out_ret_tcode: *mut ::core::ffi::c_int,
            resource_handle: *mut ::core::ffi::c_void,
        ) -> i32;
    }
}

/// What a TVM model module (graph or AOT) is made of, besides what every one has.
pub struct TvmModule<'a> {
    /// The model.
    pub desc: &'a ModelDesc,
    /// `ARENA_BYTES`.
    pub arena: u64,
    /// Its documentation (doc-comment attributes).
    pub arena_doc: TokenStream,
    /// Constants that follow it.
    pub consts: TokenStream,
    /// Offset of each output in the arena (model order).
    pub output_offsets: Vec<u64>,
    /// The C functions' declarations (and tables of them).
    pub decls: TokenStream,
    /// dtype, shape and parameter items.
    pub items: TokenStream,
    /// How the parameters are held.
    pub api: ParamApi,
    /// The documentation of `Model`.
    pub model_doc: String,
    /// The body of `run()` between entering and leaving the run `r`.
    pub body: TokenStream,
    /// The documentation of `workspace_high_water()`.
    pub high_water_doc: &'static str,
}

/// The module of a TVM model: the interface, `ARENA_BYTES` (every output checked to fit it at
/// compile time), the declarations and items, and the static state, `Model`, `take()`, `run()`
/// and `workspace_high_water()`.
pub fn tvm_model(m: TvmModule<'_>) -> Result<TokenStream> {
    let TvmModule {
        desc,
        arena,
        arena_doc,
        consts: extra_consts,
        output_offsets,
        decls,
        items,
        api,
        model_doc,
        body,
        high_water_doc,
    } = m;
    let interface = interface(desc)?;
    let mut out_fields = Vec::new();
    let mut out_checks = Vec::new();
    for (t, &off) in desc.outputs.iter().zip(&output_offsets) {
        let f = ident(&t.ident);
        let (o, b) = (lit(off), lit(t.bytes()));
        out_fields.push(quote!(#f: ::mlf_runtime::view(&state.arena.0, #o)));
        out_checks.push(quote!(
            const _: () = assert!(#o + #b <= ARENA_BYTES);
        ));
    }
    let arena = lit(arena);
    let ParamApi { consts, state_fields, state_init, enter, load_fn, run_sig, check_loaded } = api;
    Ok(quote! {
        #interface

        #arena_doc
        pub const ARENA_BYTES: usize = #arena;
        #extra_consts
        #(#out_checks)*

        #decls

        #items

        #consts

        struct State {
            arena: ::mlf_runtime::Arena<#arena>,
            #state_fields
        }

        static STATE: ::mlf_runtime::TakeOnce<State> = ::mlf_runtime::TakeOnce::new(State { arena: ::mlf_runtime::Arena::new(), #state_init });

        #[doc = #model_doc]
        pub struct Model {
            state: ::mlf_runtime::Taken<State>,
            high_water: usize,
        }

        impl Model {
            /// Takes the model (its static memory). `None` while another `Model` of this kind
            /// is alive.
            pub fn take() -> Option<Model> {
                STATE.take().map(|state| Model { state, high_water: 0 })
            }

            #load_fn

            /// Runs the model.
            #run_sig {
                let state = &mut *self.state;
                #check_loaded
                let mut r = #enter;
                #body
                self.high_water = r.high_water();
                drop(r);
                Ok(Outputs { #(#out_fields,)* })
            }

            #[doc = #high_water_doc]
            pub fn workspace_high_water(&self) -> usize {
                self.high_water
            }
        }
    })
}
