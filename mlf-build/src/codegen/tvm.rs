//! What the modules of the two TVM executors (graph and AOT) share: DLPack dtype and shape
//! statics, embedded or external parameters, declarations of packed C functions, and their
//! part of the module skeleton (the arena, `run()` around the calls into the model's C).

use std::collections::BTreeMap;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

use super::render::{blank, comment};
use super::skeleton::{self, Field};
use super::{ident, lit, usize_lit};
use crate::error::Result;
use crate::model::{ModelDesc, Placement, TensorInfo};
use crate::plan::split::{ObjectSections, Split};
use crate::support::dtype::DType;

pub use super::param_refs::param_refs;

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

/// The embedded copy of parameter bytes, defined outside Rust by the assembly the build step
/// compiles with the model's C (`.incbin` of the parameter's file into read-only data, aligned
/// to 64, under the symbol `symbol`), so that rustc never holds the bytes: the extern static
/// `<name>_BYTES` and `static <name>: &Aligned<N>`, the safe reference the module uses.
pub fn embedded_param(name: &Ident, symbol: &str, bytes: u64, doc: &str) -> TokenStream {
    let n = lit(bytes);
    let extern_name = ident(&format!("{name}_BYTES"));
    let extern_doc = format!(" The bytes of [`{name}`], defined by the build step's assembly.");
    let safety = comment(format!(
        "SAFETY: the build step's assembly defines `{symbol}` as exactly these {bytes} bytes (the parameter's \
         file), 64-byte aligned, in read-only data that nothing writes."
    ));
    quote! {
        unsafe extern "C" {
            #[doc = #extern_doc]
            #[link_name = #symbol]
            static #extern_name: ::mlf_runtime::Aligned<#n>;
        }
        #safety
        #[doc = #doc]
        static #name: &::mlf_runtime::Aligned<#n> = unsafe { &#extern_name };
    }
}

/// Where a generated module finds its parameters.
#[derive(Clone, Copy, Debug)]
pub enum ParamCode<'a> {
    /// In the program image: for each parameter of the model (by index), the symbol the build
    /// step's assembly defines its aligned bytes under, or `None` when the C already holds it.
    Embedded(&'a [Option<String>]),
    /// Loaded once from these files into a static region (`Model::load`).
    Resident(&'a Split),
    /// Read from these files just before each call that uses them.
    Streamed(&'a Split),
    /// Read from these files into the resident region's layout the first time a call uses them.
    Lazy(&'a Split),
}

impl<'a> ParamCode<'a> {
    /// The placement this is the code of.
    pub fn placement(&self) -> Placement {
        match self {
            ParamCode::Embedded(_) => Placement::Embedded,
            ParamCode::Resident(_) => Placement::Resident,
            ParamCode::Streamed(_) => Placement::Streamed,
            ParamCode::Lazy(_) => Placement::Lazy,
        }
    }

    /// The parameter files of external parameters.
    pub fn split(&self) -> Option<&'a Split> {
        match *self {
            ParamCode::Embedded(_) => None,
            ParamCode::Resident(s) | ParamCode::Streamed(s) | ParamCode::Lazy(s) => Some(s),
        }
    }
}

/// How a TVM model's generated `Model` holds its parameters: nothing extra (embedded), a static
/// region filled once by `load` (resident), a staging buffer filled before each call
/// (streamed), or the resident region filled as calls first need its files (lazy).
pub struct ParamApi {
    /// Constants describing the region (`PARAM_BYTES` and `PARAM_OFFSETS`, or `STAGING_BYTES`).
    pub consts: Vec<TokenStream>,
    /// The region's static (`PARAM_REGION` or `STAGING`), if any.
    pub statics: Vec<TokenStream>,
    /// Fields of the state (resident: whether `load` ran; lazy: which files are loaded).
    pub state: Vec<Field>,
    /// The expression that starts the run, and what it does.
    pub enter: (TokenStream, String),
    /// `load` (resident), `params_loaded` (lazy).
    pub methods: Vec<TokenStream>,
    /// The documentation and signature of `run`.
    pub run_sig: TokenStream,
    /// The check at the start of `run` (resident only).
    pub check_loaded: TokenStream,
}

/// The documentation and signature of `run` (`source`: streamed or lazily loaded parameters are
/// read from a `ParamSource` it takes, as `source` says).
fn run_sig(source: Option<&str>) -> TokenStream {
    let (doc, extra) = match source {
        Some(what) => {
            (format!(" Runs the model, reading {what}."), quote!(, source: &mut dyn ::mlf_runtime::params::ParamSource))
        }
        None => (" Runs the model.".to_string(), quote!()),
    };
    let result = quote!(Result<Outputs<'_>, ::mlf_runtime::Error>);
    quote!(#[doc = #doc] pub fn run(&mut self, inputs: &Inputs<'_> #extra) -> #result)
}

/// The symbol the parameter region (or staging buffer) is exported under when the model's LLVM
/// objects had constant sections taken out (`None` otherwise).
pub fn object_region_symbol(split: Option<&Split>, symbol_prefix: &str) -> Option<String> {
    split.and_then(|s| s.objects.as_ref()).map(|_| format!("{symbol_prefix}{}", ObjectSections::REGION_SYMBOL))
}

/// The name of the static holding external parameters for `placement` (`PARAM_REGION` when
/// resident or lazy, `STAGING` when streamed).
pub fn region_static(placement: Placement) -> Ident {
    ident(if placement == Placement::Streamed { "STAGING" } else { "PARAM_REGION" })
}

/// How `run()` enters its run.
#[derive(Clone, Copy, Debug)]
pub enum RunEnter {
    /// Through the thread's workspace session (`Run::enter`), allocations aligned to `align`.
    Session {
        /// Alignment of workspace allocations.
        align: u64,
    },
    /// With the model's own workspace, which its C allocates from inline (`Run::enter_inline`
    /// over `entry::WORKSPACE`).
    Inline,
}

/// The [`ParamApi`] for `placement`. `region` is the resident region or the staging buffer in
/// bytes; `offsets` the resident offset of each entry of `PARAMS`; `enter` how `run()` enters
/// (the workspace it uses); `after_load` what `load` does once the files are read (constant
/// arrays bound).
///
/// `export`: the symbol the region is exported under, when the model's LLVM objects reach
/// constants in it through relocations ([`object_region_symbol`]).
///
/// `section`: the link section the region goes in (`params_section`), if any.
pub fn param_api(
    placement: Placement,
    enter: RunEnter,
    (region, export, section): (u64, Option<String>, Option<&str>),
    offsets: &[u64],
    after_load: TokenStream,
) -> ParamApi {
    let (region_lit, region) = (lit(region), region_static(placement));
    let (enter_plain, enter_with) = match enter {
        RunEnter::Session { align } => {
            let align = lit(align);
            (
                quote!(::mlf_runtime::tvm::Run::enter(&ARENA, #align)),
                quote!(::mlf_runtime::tvm::Run::enter_with_params(&ARENA, &#region, #align)),
            )
        }
        RunEnter::Inline => (
            quote!(::mlf_runtime::tvm::Run::enter_inline(&ARENA, &entry::WORKSPACE)),
            quote!(::mlf_runtime::tvm::Run::enter_inline_with_params(&ARENA, &#region, &entry::WORKSPACE)),
        ),
    };
    let place = super::section::attr(section);
    let region_item = |doc: &str| {
        let doc = format!(" {doc} ({}).", super::section::where_doc(section, "zeroed: in `.bss`"));
        let export = export.as_ref().map(|sym| {
            let note = format!(
                " Exported as `{sym}`: the model's LLVM objects read the constant sections taken out of them here (their relocations were retargeted at build time)."
            );
            quote!(#[doc = #note] #[unsafe(export_name = #sym)])
        });
        quote! {
            #[doc = #doc]
            #export
            #place
            static #region: ::mlf_runtime::StaticArena<#region_lit> = ::mlf_runtime::StaticArena::new();
        }
    };
    let enter_note = "Enter the run: the arena becomes this model's for TVMBackendAllocWorkspace until `r` ends";
    match placement {
        Placement::Embedded => ParamApi {
            consts: Vec::new(),
            statics: Vec::new(),
            state: Vec::new(),
            enter: (enter_plain, format!("{enter_note}.")),
            methods: Vec::new(),
            run_sig: run_sig(None),
            check_loaded: quote!(),
        },
        Placement::Lazy => lazy_api(offsets.len(), region_lit.clone(), enter_with, region_item, enter_note),
        Placement::Resident => {
            resident_api(offsets, region_lit.clone(), enter_with, region_item, (enter_note, after_load))
        }
        Placement::Streamed => ParamApi {
            consts: vec![quote! {
                /// Bytes of the staging buffer parameters are streamed through: the largest number
                /// of parameter bytes one call reads.
                pub const STAGING_BYTES: usize = #region_lit;
            }],
            statics: vec![region_item("The staging buffer each call's parameters are read into")],
            state: Vec::new(),
            enter: (enter_with, format!("{enter_note}; parameters are staged in `STAGING`.")),
            methods: Vec::new(),
            run_sig: run_sig(Some("each call's parameters from `source` just before the call")),
            check_loaded: quote!(),
        },
    }
}

/// `PARAM_OFFSETS`: where each file of `PARAMS` lies in the parameter region.
pub fn param_offsets(offsets: &[u64]) -> TokenStream {
    let offs = offsets.iter().map(|&o| lit(o));
    let n = usize_lit(offsets.len());
    quote! {
        /// Where each file of [`PARAMS`] lies in the parameter region.
        const PARAM_OFFSETS: [usize; #n] = [#(#offs),*];
    }
}

/// The [`ParamApi`] of lazily loaded parameters (`files` of them): `PARAM_REGION`, and the
/// record of which files earlier runs loaded into it.
fn lazy_api(
    files: usize,
    region_lit: Literal,
    enter_with: TokenStream,
    region_item: impl Fn(&str) -> TokenStream,
    enter_note: &str,
) -> ParamApi {
    let words = usize_lit(files.div_ceil(32));
    ParamApi {
        consts: vec![quote! {
            /// Bytes of static RAM holding the parameters (lazy placement: each is read into it the
            /// first time a call that uses it runs, and stays).
            pub const PARAM_BYTES: usize = #region_lit;
        }],
        statics: vec![region_item("The parameters, each read into its place by the first run that needs it")],
        state: vec![Field::new(
            "loaded",
            quote!(::mlf_runtime::params::Loaded<#words>),
            quote!(::mlf_runtime::params::Loaded::new()),
            "Which files of [`PARAMS`] earlier runs read into `PARAM_REGION` (one bit each).",
        )],
        enter: (
            enter_with,
            format!(
                "{enter_note}; parameters are read in place from `PARAM_REGION`, where each is loaded the first time a call needs it."
            ),
        ),
        methods: vec![
            quote! {
                /// How many files of [`PARAMS`] are loaded: each is read by the first run that
                /// calls an operator using it, and never again (until [`Model::unload`]).
                pub fn params_loaded(&self) -> usize {
                    self.state.loaded.count()
                }
            },
            quote! {
                /// Forgets every loaded parameter (after the parameter source changed, say): the
                /// next run reads each again as its calls need it.
                pub fn unload(&mut self) {
                    self.state.loaded.clear();
                }
            },
        ],
        run_sig: run_sig(Some(
            "from `source` each parameter not loaded yet, into its place, just before the first call that uses it (later runs read nothing; a failed read is returned and read again by the next run)",
        )),
        check_loaded: quote!(),
    }
}

/// The [`ParamApi`] of resident parameters: `PARAM_REGION`, `load` and the check that it ran.
fn resident_api(
    offsets: &[u64],
    region_lit: Literal,
    enter_with: TokenStream,
    region_item: impl Fn(&str) -> TokenStream,
    (enter_note, after_load): (&str, TokenStream),
) -> ParamApi {
    ParamApi {
        consts: vec![
            quote! {
                /// Bytes of static RAM holding the parameters once loaded (resident placement).
                pub const PARAM_BYTES: usize = #region_lit;
            },
            param_offsets(offsets),
        ],
        statics: vec![region_item("The parameters, once loaded by [`Model::load`]")],
        state: vec![Field::new(
            "loaded",
            quote!(bool),
            quote!(false),
            "Whether [`Model::load`] filled `PARAM_REGION`.",
        )],
        enter: (enter_with, format!("{enter_note}; parameters are read in place from the loaded region.")),
        methods: vec![quote! {
            /// Loads every parameter from `source` into the model's static parameter region,
            /// checking sizes and hashes. Call once before [`Model::run`].
            pub fn load(&mut self, source: &mut dyn ::mlf_runtime::params::ParamSource) -> Result<(), ::mlf_runtime::Error> {
                self.state.loaded = false;
                // SAFETY: this `Model` holds `STATE`, which owns `PARAM_REGION`, and no run is
                // in progress (`&mut self`), so nothing else reads or writes it.
                let region = unsafe { PARAM_REGION.bytes_mut() };
                for (p, &offset) in PARAMS.iter().zip(PARAM_OFFSETS.iter()) {
                    source.load(p, &mut region[offset..offset + p.bytes])?;
                }
                #after_load
                self.state.loaded = true;
                Ok(())
            }
        }],
        run_sig: run_sig(None),
        check_loaded: quote! {
            if !self.state.loaded {
                return Err(::mlf_runtime::params::ParamError::new(::mlf_runtime::params::ParamErrorKind::NotLoaded, "", "").into());
            }
        },
    }
}

/// The declaration of a packed C function `name` (TVM's `TVMBackendPackedCFunc` signature).
pub fn packed_fn_decl(name: &Ident) -> TokenStream {
    quote! {
        pub unsafe fn #name(
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
    /// The tables built at compile time: tensor descriptors and calls (after the arena).
    pub tables: Vec<TokenStream>,
    /// How the parameters are held.
    pub params: ParamApi,
    /// Fields of the state besides the parameters' (linked parameters looked up).
    pub state: Vec<Field>,
    /// The documentation of `Model`.
    pub model_doc: String,
    /// Statements run when the model is taken (describing the descriptors a run fills in),
    /// inside an `unsafe` block.
    pub on_take: TokenStream,
    /// Statements before the calls: the caller's inputs stored into their descriptors, copies.
    pub before: TokenStream,
    /// The calls into the model's C (inside the `unsafe` block).
    pub calls: TokenStream,
    /// The justification of the `unsafe` block.
    pub safety: &'static str,
    /// Statements after the calls (copies into the outputs).
    pub after: TokenStream,
    /// The documentation of `workspace_high_water()`.
    pub high_water_doc: &'static str,
    /// The shared arena the module's `ARENA` is, if any.
    pub shared: Option<skeleton::Shared>,
    /// The link section of the module's own `ARENA` (`arena_section`), if any.
    pub arena_section: Option<&'a str>,
}

/// The justification of `Run::enter` in every TVM module.
const ENTER_SAFETY: &str = "SAFETY: this `Model` holds `STATE`, the one owner of `ARENA`, the parameter \
    region and the tensor descriptors, so nothing else uses them until `r` ends.";

/// The fields of `Outputs` (views of the arena) and where each output is, with a compile-time
/// check that each lies inside the arena pushed to `consts`.
fn outputs(desc: &ModelDesc, offsets: &[u64], consts: &mut Vec<TokenStream>) -> (Vec<TokenStream>, Vec<String>) {
    let mut out_fields = Vec::new();
    let mut out_places = Vec::new();
    for (t, &off) in desc.outputs.iter().zip(offsets) {
        let (f, o, b) = (ident(&t.ident), lit(off), lit(t.bytes()));
        out_fields.push(quote!(#f: ARENA.view(#o)));
        out_places.push(format!("`{}` at {}", t.ident, bytes(off, t.bytes())));
        let doc = format!(" Output `{}` lies inside the arena (checked when the module compiles).", t.ident);
        consts.push(quote! {
            #[doc = #doc]
            const _: () = assert!(#o + #b <= ARENA_BYTES);
        });
    }
    (out_fields, out_places)
}

/// The module of a TVM model: the interface, `ARENA_BYTES` (every output checked to fit it at
/// compile time), the declarations and statics, the arena and the tables that point into it,
/// the state, `Model`, `take()`, `run()` and `workspace_high_water()`.
pub fn module(m: TvmModule<'_>) -> Result<TokenStream> {
    let desc = m.desc;
    let (arena, arena_doc) = (lit(m.arena), format!(" {}", m.arena_doc));
    let mut consts = vec![quote! {
        #[doc = #arena_doc]
        pub const ARENA_BYTES: usize = #arena;
    }];
    consts.extend(m.consts);
    let (out_fields, out_places) = outputs(desc, &m.output_offsets, &mut consts);
    consts.extend(m.params.consts);
    let mut statics = m.statics;
    statics.extend(m.params.statics);
    statics.push(match (&m.shared, m.arena_section) {
        (None, Some(section)) => {
            let doc = format!(
                " The arena: every tensor the model writes and the scratch memory of its C ({}; every tensor is \
                 written before it is read). The descriptors below point into it.",
                super::section::where_doc(Some(section), "")
            );
            quote! {
                #[doc = #doc]
                #[unsafe(link_section = #section)]
                static ARENA: ::mlf_runtime::StaticArena<ARENA_BYTES> = ::mlf_runtime::StaticArena::new();
            }
        }
        (None, None) => quote! {
            /// The arena: every tensor the model writes and the scratch memory of its C (zeroed: in
            /// `.bss`). The descriptors below point into it.
            static ARENA: ::mlf_runtime::StaticArena<ARENA_BYTES> = ::mlf_runtime::StaticArena::new();
        },
        (Some(shared), _) => shared.arena_use(),
    });
    statics.extend(m.tables);
    let mut state =
        vec![Field::new("high_water", quote!(usize), quote!(0), "The workspace high-water mark of the last run.")];
    state.extend(m.params.state);
    state.extend(m.state);
    let (enter, enter_what) = (&m.params.enter.0, comment(&m.params.enter.1));
    let (check_loaded, before, calls, after, blank) = (&m.params.check_loaded, &m.before, &m.calls, &m.after, blank());
    let safety = comment(format!("SAFETY: {}", m.safety));
    let enter_safety = comment(if m.shared.is_some() { skeleton::ENTER_SAFETY_SHARED } else { ENTER_SAFETY });
    let outputs = comment(format!("The outputs, read from the arena: {}.", out_places.join(", ")));
    let views_safety = comment(
        "SAFETY: the run is over, and the outputs borrow this `Model`, so no run writes the arena while they live.",
    );
    let high_water_doc = format!(" {}", m.high_water_doc);
    let mut methods = m.params.methods;
    methods.push(quote! {
        #[doc = #high_water_doc]
        pub fn workspace_high_water(&self) -> usize {
            self.state.high_water
        }
    });
    let on_take = &m.on_take;
    let shared = m.shared.clone();
    let take = if on_take.is_empty() {
        quote!()
    } else {
        let note = comment(
            "SAFETY: this `Model` is the one holder of `STATE`, which owns the descriptors, and no run is in progress.",
        );
        quote!(#note unsafe { #on_take })
    };
    skeleton::module(skeleton::Module {
        desc,
        name_doc: " The model's name as the compiler recorded it.".into(),
        consts,
        decls: m.decls,
        statics,
        state,
        model_doc: m.model_doc,
        model_fields: Vec::new(),
        on_take: take,
        methods,
        run_sig: m.params.run_sig,
        run_body: quote! {
            #check_loaded
            #enter_what
            #enter_safety
            let mut r = unsafe { #enter? };
            #before
            #blank
            #safety
            unsafe {
                #calls
            }
            #blank
            #after
            self.state.high_water = r.finish();
            #outputs
            #views_safety
            unsafe { Ok(Outputs { #(#out_fields,)* }) }
        },
        shared,
        state_section: None,
    })
}
