//! What the modules of the two TVM executors (graph and AOT) share: DLPack dtype and shape
//! statics, embedded or external parameters, declarations of packed C functions, and their
//! part of the module skeleton (the arena, `run()` around the calls into the model's C).

use std::collections::BTreeMap;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

use super::render::{blank, comment};
use super::skeleton::{self, Field};
use super::{IncludePath, ident, lit, usize_lit};
use crate::error::Result;
use crate::model::{ModelDesc, Placement, TensorInfo};
use crate::plan::split::Split;
use crate::support::dtype::DType;

/// `const DT_…: DLDataType` items for the dtypes in `dtypes`, and a map from dtype to the item.
pub fn dtype_consts(dtypes: impl IntoIterator<Item = DType>) -> (Vec<TokenStream>, BTreeMap<DType, Ident>) {
    let mut map = BTreeMap::new();
    let mut items = Vec::new();
    for d in dtypes {
        if map.contains_key(&d) {
            continue;
        }
        let id = ident(&format!("DT_{}", d.to_string().to_ascii_uppercase()));
        let code = Literal::u8_unsuffixed(d.code.code());
        let bits = Literal::u8_unsuffixed(d.bits);
        let lanes = Literal::u16_unsuffixed(d.lanes);
        let doc = format!(" DLPack's `{d}`.");
        items.push(quote! {
            #[doc = #doc]
            const #id: ::mlf_runtime::tvm::ffi::DLDataType = ::mlf_runtime::tvm::ffi::DLDataType { code: #code, bits: #bits, lanes: #lanes };
        });
        map.insert(d, id);
    }
    (items, map)
}

/// `static SHAPE_…: [i64; N]` items for the shapes in `shapes`, and a map from shape to item.
pub fn shape_statics<'a>(
    shapes: impl IntoIterator<Item = &'a Vec<u64>>,
) -> (Vec<TokenStream>, BTreeMap<Vec<u64>, Ident>) {
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
        let n = usize_lit(s.len());
        let dims = s.iter().map(|&d| Literal::i64_unsuffixed(d as i64));
        let doc = format!(" The shape {s:?}, as the `DLTensor`s passed to the C point at it.");
        items.push(quote! {
            #[doc = #doc]
            static #id: [i64; #n] = [#(#dims),*];
        });
        map.insert(s.clone(), id);
    }
    (items, map)
}

/// The embedded copy of parameter bytes: `static <name>: Aligned<N> = Aligned(*include_bytes!(…))`.
pub fn embedded_param(name: &Ident, path: &IncludePath, bytes: u64, doc: &str) -> TokenStream {
    let (path, n) = (path.tokens(), lit(bytes));
    quote! {
        #[doc = #doc]
        static #name: ::mlf_runtime::Aligned<#n> = ::mlf_runtime::Aligned(*include_bytes!(#path));
    }
}

/// Where a generated module finds its parameters.
#[derive(Clone, Copy, Debug)]
pub enum ParamCode<'a> {
    /// In the program image: for each parameter of the model (by index), the file its aligned
    /// bytes are embedded from, or `None` when the C already holds it.
    Embedded(&'a [Option<IncludePath>]),
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

/// How a TVM model's generated `Model` holds its parameters: nothing extra (embedded), a static
/// region filled once by `load` (resident), or a staging buffer filled before each call
/// (streamed).
pub struct ParamApi {
    /// Constants describing the region (`PARAM_BYTES` and `PARAM_OFFSETS`, or `STAGING_BYTES`).
    pub consts: Vec<TokenStream>,
    /// Fields of the state besides the arena.
    pub state: Vec<Field>,
    /// The expression that starts the run, and what it does.
    pub enter: (TokenStream, String),
    /// `load` (resident only).
    pub methods: Vec<TokenStream>,
    /// The documentation and signature of `run`.
    pub run_sig: TokenStream,
    /// The check at the start of `run` (resident only).
    pub check_loaded: TokenStream,
}

/// The documentation and signature of `run` (`source`: streamed parameters are read from a
/// `ParamSource` it takes).
fn run_sig(source: bool) -> TokenStream {
    if source {
        quote! {
            /// Runs the model, reading each call's parameters from `source` just before the call.
            pub fn run(&mut self, inputs: &Inputs<'_>, source: &mut dyn ::mlf_runtime::params::ParamSource) -> Result<Outputs<'_>, ::mlf_runtime::Error>
        }
    } else {
        quote! {
            /// Runs the model.
            pub fn run(&mut self, inputs: &Inputs<'_>) -> Result<Outputs<'_>, ::mlf_runtime::Error>
        }
    }
}

/// The [`ParamApi`] for `placement`. `region` is the resident region or the staging buffer in
/// bytes; `offsets` the resident offset of each entry of `PARAMS`; `n_slots` the tensors the run
/// binds and `align` their alignment.
pub fn param_api(placement: Placement, n_slots: usize, align: u64, region: u64, offsets: &[u64]) -> ParamApi {
    let run_doc = format!(" One run of the model: the {n_slots} tensors it binds and the calls into its C.");
    let (n_slots, align, region) = (usize_lit(n_slots), lit(align), lit(region));
    let enter_with = |buffer: TokenStream| quote!(Run::enter_with_params(&mut state.arena.0, &mut #buffer, #align)?);
    let run_type = quote! {
        #[doc = #run_doc]
        type Run<'a> = ::mlf_runtime::tvm::Run<'a, #n_slots>;
    };
    match placement {
        Placement::Embedded => ParamApi {
            consts: vec![run_type],
            state: Vec::new(),
            enter: (
                quote!(Run::enter(&mut state.arena.0, #align)?),
                "Enter the run: the arena becomes this model's for TVMBackendAllocWorkspace until `r` is dropped.".into(),
            ),
            methods: Vec::new(),
            run_sig: run_sig(false),
            check_loaded: quote!(),
        },
        Placement::Resident => {
            let offs = offsets.iter().map(|&o| lit(o));
            let n = usize_lit(offsets.len());
            ParamApi {
                consts: vec![
                    run_type,
                    quote! {
                        /// Bytes of static RAM holding the parameters once loaded (resident placement).
                        pub const PARAM_BYTES: usize = #region;
                    },
                    quote! {
                        /// Where each file of [`PARAMS`] lies in the parameter region.
                        const PARAM_OFFSETS: [usize; #n] = [#(#offs),*];
                    },
                ],
                state: vec![
                    Field::new("params", quote!(::mlf_runtime::Arena<#region>), quote!(::mlf_runtime::Arena::new()), "The parameters, once loaded."),
                    Field::new("loaded", quote!(bool), quote!(false), "Whether [`Model::load`] filled `params`."),
                ],
                enter: (
                    enter_with(quote!(state.params.0)),
                    "Enter the run: the arena becomes this model's for TVMBackendAllocWorkspace until `r` is dropped; parameters are read in place from the loaded region.".into(),
                ),
                methods: vec![quote! {
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
                }],
                run_sig: run_sig(false),
                check_loaded: quote! {
                    if !state.loaded {
                        return Err(::mlf_runtime::params::ParamError::new(::mlf_runtime::params::ParamErrorKind::NotLoaded, "", "").into());
                    }
                },
            }
        }
        Placement::Streamed => ParamApi {
            consts: vec![run_type, quote! {
                /// Bytes of the staging buffer parameters are streamed through: the largest number
                /// of parameter bytes one call reads.
                pub const STAGING_BYTES: usize = #region;
            }],
            state: vec![Field::new(
                "staging",
                quote!(::mlf_runtime::Arena<#region>),
                quote!(::mlf_runtime::Arena::new()),
                "The staging buffer each call's parameters are read into.",
            )],
            enter: (
                enter_with(quote!(state.staging.0)),
                "Enter the run: the arena becomes this model's for TVMBackendAllocWorkspace until `r` is dropped; parameters are staged in `staging`.".into(),
            ),
            methods: Vec::new(),
            run_sig: run_sig(true),
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
    let n = usize_lit(split.files.len());
    quote! {
        #[doc = #doc]
        pub static PARAMS: [::mlf_runtime::params::ParamRef; #n] = [#(#refs),*];
    }
}

/// The declaration of a packed C function `name` (TVM's `TVMBackendPackedCFunc` signature).
pub fn packed_fn_decl(name: &Ident) -> TokenStream {
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

/// `dtype shape` of a tensor, as comments name it.
pub fn typed(t: &TensorInfo) -> String {
    format!("{} {:?}", t.dtype, t.shape)
}

/// `bytes a..b`.
pub fn bytes(offset: u64, len: u64) -> String {
    format!("bytes {offset}..{}", offset + len)
}

/// What a TVM model module (graph or AOT) is made of, besides what every module has.
pub struct TvmModule<'a> {
    /// The model.
    pub desc: &'a ModelDesc,
    /// `ARENA_BYTES`.
    pub arena: u64,
    /// Its documentation.
    pub arena_doc: &'static str,
    /// Constants that follow it.
    pub consts: Vec<TokenStream>,
    /// Offset of each output in the arena (model order).
    pub output_offsets: Vec<u64>,
    /// The C functions' declarations (and tables of them).
    pub decls: Vec<TokenStream>,
    /// dtype, shape and parameter statics.
    pub statics: Vec<TokenStream>,
    /// How the parameters are held.
    pub params: ParamApi,
    /// The documentation of `Model`.
    pub model_doc: String,
    /// Statements binding every tensor to its place before the calls.
    pub bind: TokenStream,
    /// The calls into the model's C (inside the `unsafe` block).
    pub calls: TokenStream,
    /// The justification of the `unsafe` block.
    pub safety: &'static str,
    /// Statements after the calls (copies into the outputs).
    pub after: TokenStream,
    /// The documentation of `workspace_high_water()`.
    pub high_water_doc: &'static str,
}

/// The module of a TVM model: the interface, `ARENA_BYTES` (every output checked to fit it at
/// compile time), the declarations and statics, and the static state, `Model`, `take()`,
/// `run()` and `workspace_high_water()`.
pub fn module(m: TvmModule<'_>) -> Result<TokenStream> {
    let desc = m.desc;
    let (arena, arena_doc) = (lit(m.arena), format!(" {}", m.arena_doc));
    let mut consts = vec![quote! {
        #[doc = #arena_doc]
        pub const ARENA_BYTES: usize = #arena;
    }];
    consts.extend(m.consts);
    let mut out_fields = Vec::new();
    let mut out_places = Vec::new();
    for (t, &off) in desc.outputs.iter().zip(&m.output_offsets) {
        let (f, o, b) = (ident(&t.ident), lit(off), lit(t.bytes()));
        out_fields.push(quote!(#f: ::mlf_runtime::view(&state.arena.0, #o)));
        out_places.push(format!("`{}` at {}", t.ident, bytes(off, t.bytes())));
        let doc = format!(" Output `{}` lies inside the arena (checked when the module compiles).", t.ident);
        consts.push(quote! {
            #[doc = #doc]
            const _: () = assert!(#o + #b <= ARENA_BYTES);
        });
    }
    consts.extend(m.params.consts);
    let mut state = vec![Field::new(
        "arena",
        quote!(::mlf_runtime::Arena<#arena>),
        quote!(::mlf_runtime::Arena::new()),
        "Every tensor the model writes and the scratch memory of its C.",
    )];
    state.extend(m.params.state);
    let (enter, enter_what) = (&m.params.enter.0, comment(&m.params.enter.1));
    let (check_loaded, bind, calls, after, blank) = (&m.params.check_loaded, &m.bind, &m.calls, &m.after, blank());
    let safety = comment(format!("SAFETY: {}", m.safety));
    let outputs = comment(format!("The outputs, read from the arena: {}.", out_places.join(", ")));
    let high_water_doc = format!(" {}", m.high_water_doc);
    let mut methods = m.params.methods;
    methods.push(quote! {
        #[doc = #high_water_doc]
        pub fn workspace_high_water(&self) -> usize {
            self.high_water
        }
    });
    skeleton::module(skeleton::Module {
        desc,
        name_doc: " The model's name as the compiler recorded it.".into(),
        consts,
        decls: m.decls,
        statics: m.statics,
        state,
        model_doc: m.model_doc,
        model_fields: vec![Field::new(
            "high_water",
            quote!(usize),
            quote!(0),
            "The workspace high-water mark of the last run.",
        )],
        methods,
        run_sig: m.params.run_sig,
        run_body: quote! {
            let state = &mut *self.state;
            #check_loaded
            #enter_what
            let mut r = #enter;
            #blank
            #bind
            #blank
            #safety
            unsafe {
                #calls
            }
            #blank
            #after
            self.high_water = r.high_water();
            drop(r);
            #outputs
            Ok(Outputs { #(#out_fields,)* })
        },
    })
}
