//! The layout every generated module shares, whatever runs the model: the name and shape
//! constants, the typed `Inputs`/`Outputs`, the executor's constants, declarations and statics,
//! the static state handed out once at a time, and `Model` with `take()` and `run()`.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

use super::render::blank;
use super::{ident, lit, usize_lit};
use crate::error::{Context, Result};
use crate::model::{ModelDesc, TensorInfo};
use crate::support::names;

/// A field of the static state or of `Model`.
pub struct Field {
    /// Its name.
    pub name: Ident,
    /// Its type.
    pub ty: TokenStream,
    /// Its initial value.
    pub init: TokenStream,
    /// What it holds (its documentation).
    pub what: String,
    /// `init` may give up with `?` (a `Model` field: `take()` then returns `None`).
    pub fallible: bool,
    /// `init` is all zero bytes (a byte arena): a state kept in a shared arena needs not write it.
    pub zeroed: bool,
}

impl Field {
    /// A field `name: ty` starting as `init`, holding `what`.
    pub fn new(name: &str, ty: TokenStream, init: TokenStream, what: impl Into<String>) -> Field {
        Field { name: ident(name), ty, init, what: what.into(), fallible: false, zeroed: false }
    }

    /// A state field whose `init` is all zero bytes (a byte arena).
    pub fn zeroed(name: &str, ty: TokenStream, init: TokenStream, what: impl Into<String>) -> Field {
        Field { zeroed: true, ..Field::new(name, ty, init, what) }
    }

    /// A `Model` field whose `init` uses `?` on an `Option` (a resource taken with the state).
    pub fn fallible(name: &str, ty: TokenStream, init: TokenStream, what: impl Into<String>) -> Field {
        Field { fallible: true, ..Field::new(name, ty, init, what) }
    }
}

/// What a module is made of besides what every module has.
pub struct Module<'a> {
    /// The model.
    pub desc: &'a ModelDesc,
    /// The documentation of `NAME`.
    pub name_doc: String,
    /// Constants after the interface (`ARENA_BYTES` first), one item each.
    pub consts: Vec<TokenStream>,
    /// Declarations: the C functions the module calls, embedded files, tables.
    pub decls: Vec<TokenStream>,
    /// Statics the run reads: dtypes, shapes, parameters.
    pub statics: Vec<TokenStream>,
    /// The fields of the static state.
    pub state: Vec<Field>,
    /// The documentation of `Model`.
    pub model_doc: String,
    /// The fields of `Model` besides its state.
    pub model_fields: Vec<Field>,
    /// Statements `take()` runs once the state is taken (before the `Model` is made).
    pub on_take: TokenStream,
    /// Methods of `Model` between `take()` and `run()`.
    pub methods: Vec<TokenStream>,
    /// The documentation and signature of `run()`.
    pub run_sig: TokenStream,
    /// The body of `run()`.
    pub run_body: TokenStream,
    /// The shared arena the model's memory lives in, if any.
    pub shared: Option<Shared>,
    /// The link section of `STATE` (a kmodel's `arena_section`: its byte arenas are in the
    /// state), if any.
    pub state_section: Option<&'a str>,
}

/// A model built for a shared arena (`mlf_runtime::shared_arena!`): its memory lives in the
/// arena's `static`, and `Model::take(&mut arena)` borrows the arena's handle.
#[derive(Clone, Debug)]
pub struct Shared {
    /// The arena's module name, beside the model's module (`super::<arena>`).
    pub arena: String,
    /// The whole state lives in the arena (kmodels: their byte arenas are fields of the
    /// state); otherwise the executor's `ARENA` is the shared one and the state stays apart.
    pub state_in_arena: bool,
}

/// The justification of a TVM module's `Run::enter` on a shared arena.
pub const ENTER_SAFETY_SHARED: &str = "SAFETY: this `Model` holds `STATE`, the one owner of the parameter region \
    and the tensor descriptors, and borrows the shared arena's handle (so no other model uses `ARENA`) for as \
    long as it lives: nothing else uses them until `r` ends.";

impl Shared {
    /// A module's place in the shared arena `arena` (`None`: an arena of its own); refused
    /// when `arena` cannot name a Rust module.
    pub fn new(arena: Option<&str>, state_in_arena: bool) -> Result<Option<Shared>> {
        let Some(arena) = arena else { return Ok(None) };
        if !names::is_identifier(arena) {
            return Err(crate::error::Error::invalid(format!(
                "`{arena}` is not a Rust identifier, so it cannot name a shared arena's module \
                 (shared_arena!({arena}: …)); use letters, digits and `_`"
            ))
            .at("arena"));
        }
        Ok(Some(Shared { arena: arena.to_string(), state_in_arena }))
    }

    /// `use super::<arena>::ARENA;`: a TVM module's arena is the shared one.
    pub fn arena_use(&self) -> TokenStream {
        let path = self.path();
        let doc = format!(
            " The arena: the shared arena `{}`, whose first [`ARENA_BYTES`] bytes hold every tensor the model \
             writes and the scratch memory of its C. The descriptors below point into it.",
            self.arena
        );
        quote! {
            #[doc = #doc]
            use #path::ARENA;
        }
    }

    /// The path of the arena's module from inside the model's module.
    pub fn path(&self) -> TokenStream {
        let a = ident(&self.arena);
        quote!(super::#a)
    }
}

/// The Rust element type of a tensor, or an error naming it.
pub fn elem_type(t: &TensorInfo) -> Result<TokenStream> {
    let ty = t.dtype.require_rust_type().at(format!("tensor {}", t.name))?;
    let id = ident(ty);
    Ok(quote!(#id))
}

/// `pub const <IDENT>_SHAPE` for a tensor (`kind`: `input` or `output`).
fn shape_const(t: &TensorInfo, kind: &str) -> TokenStream {
    let c = ident(&format!("{}_SHAPE", names::const_ident(&t.ident)));
    let dims = t.shape.iter().map(|&d| Literal::usize_unsuffixed(d as usize));
    let rank = usize_lit(t.shape.len());
    let doc =
        format!(" Shape of {kind} `{}` ({}, raw name `{}`; shape from {}).", t.ident, t.dtype, t.name, t.shape_source);
    quote! {
        #[doc = #doc]
        pub const #c: [usize; #rank] = [#(#dims),*];
    }
}

/// The fields of `Inputs` or `Outputs` (`what`: `Input` or `Output`).
fn tensor_fields(ts: &[TensorInfo], what: &str) -> Result<Vec<TokenStream>> {
    ts.iter()
        .map(|t| {
            let f = ident(&t.ident);
            let ty = elem_type(t)?;
            let n = lit(t.numel());
            let doc = format!(" {what} `{}`: `{} {:?}`, flattened row-major.", t.name, t.dtype, t.shape);
            Ok(quote! {
                #[doc = #doc]
                pub #f: &'a [#ty; #n]
            })
        })
        .collect()
}

/// `NAME`, one `<IDENT>_SHAPE` per input and output, and the `Inputs`/`Outputs` structs.
fn interface(desc: &ModelDesc, name_doc: &str) -> Result<Vec<TokenStream>> {
    let name = &desc.name;
    let mut items = vec![quote! {
        #[doc = #name_doc]
        pub const NAME: &str = #name;
    }];
    items.extend(desc.inputs.iter().map(|t| shape_const(t, "input")));
    items.extend(desc.outputs.iter().map(|t| shape_const(t, "output")));
    let in_fields = tensor_fields(&desc.inputs, "Input")?;
    let out_fields = tensor_fields(&desc.outputs, "Output")?;
    items.push(quote! {
        /// The model's inputs, borrowed for one run.
        #[derive(Clone, Copy, Debug)]
        pub struct Inputs<'a> {
            #(#in_fields,)*
        }
    });
    items.push(quote! {
        /// The model's outputs, borrowed from the model's static memory until the next run.
        #[derive(Clone, Copy, Debug)]
        pub struct Outputs<'a> {
            #(#out_fields,)*
        }
    });
    Ok(items)
}

/// A field's declaration, documented with what it holds.
fn field_decl(f: &Field) -> TokenStream {
    let (name, ty, what) = (&f.name, &f.ty, format!(" {}", f.what));
    quote!(#[doc = #what] #name: #ty,)
}

/// The state: its struct and the static that hands it out once at a time.
fn state(fields: &[Field], section: Option<&str>) -> [TokenStream; 2] {
    let place = match section {
        None => quote!(
            /// The one [`State`]: [`Model::take`] hands it out, dropping the `Model` gives it back.
        ),
        Some(s) => {
            let doc = format!(
                " The one [`State`]: [`Model::take`] hands it out, dropping the `Model` gives it back. In the link \
                 section `{s}`, which the linker script places; the startup code must initialise it as it does \
                 `.data` (a NOLOAD section is neither loaded nor zeroed)."
            );
            quote!(#[doc = #doc] #[unsafe(link_section = #s)])
        }
    };
    let decls = fields.iter().map(field_decl);
    let inits = fields.iter().map(|f| {
        let (name, init) = (&f.name, &f.init);
        quote!(#name: #init,)
    });
    [
        quote! {
            /// The model's static memory.
            struct State {
                #(#decls)*
            }
        },
        quote! {
            #place
            static STATE: ::mlf_runtime::TakeOnce<State> = ::mlf_runtime::TakeOnce::new(State { #(#inits)* });
        },
    ]
}

/// `Model` and its `impl`.
fn model(m: &Module<'_>) -> [TokenStream; 2] {
    let doc = &m.model_doc;
    let decls: Vec<_> = m.model_fields.iter().map(field_decl).collect();
    let inits: Vec<_> = m
        .model_fields
        .iter()
        .map(|f| {
            let (name, init) = (&f.name, &f.init);
            quote!(#name: #init,)
        })
        .collect();
    let blank = blank();
    let methods: Vec<_> = m.methods.iter().map(|method| quote!(#method #blank)).collect();
    let (run_sig, run_body, on_take) = (&m.run_sig, &m.run_body, &m.on_take);
    let fallible = m.model_fields.iter().any(|f| f.fallible);
    // A field taken with the state (`?`), or statements run once the state is taken, need the
    // state taken first, in a body of its own.
    let take = if fallible || !on_take.is_empty() {
        quote! {
            let state = STATE.take()?;
            #on_take
            Some(Model { state, #(#inits)* })
        }
    } else {
        quote!(STATE.take().map(|state| Model { state, #(#inits)* }))
    };
    let take_doc: &[&str] = if fallible {
        &[
            " Takes the model (its static memory and what it runs on). `None` while another `Model`",
            " of this kind, or anything else using what it runs on, is alive.",
        ]
    } else {
        &[" Takes the model (its static memory). `None` while another `Model` of this kind", " is alive."]
    };
    let Some(shared) = &m.shared else {
        return [
            quote! {
                #[doc = #doc]
                pub struct Model {
                    /// The model's static memory, taken from [`STATE`].
                    state: ::mlf_runtime::Taken<State>,
                    #(#decls)*
                }
            },
            quote! {
                impl Model {
                    #(#[doc = #take_doc])*
                    pub fn take() -> Option<Model> {
                        #take
                    }

                    #blank
                    #(#methods)*

                    #run_sig {
                        #run_body
                    }
                }
            },
        ];
    };
    model_in_arena(m, shared, (&decls, &inits, &methods))
}

/// `Model` and its `impl` for a model on a shared arena: `take` borrows the arena's handle.
fn model_in_arena(
    m: &Module<'_>,
    shared: &Shared,
    (decls, inits, methods): (&[TokenStream], &[TokenStream], &[TokenStream]),
) -> [TokenStream; 2] {
    let (doc, blank) = (&m.model_doc, blank());
    let (run_sig, run_body, on_take) = (&m.run_sig, &m.run_body, &m.on_take);
    let fallible = m.model_fields.iter().any(|f| f.fallible);
    let arena = shared.path();
    let shared_doc = format!(
        " Takes the model on the shared arena `{0}`: the model borrows the arena's handle mutably for as long \
         as it lives, so no other model of `{0}` can be taken until it is dropped (the compiler checks it). \
         {1}",
        shared.arena,
        match (shared.state_in_arena, fallible) {
            (true, false) => "Its state is made afresh in the arena each time (`Some` always).",
            (true, true) => "`None` while anything else uses what it runs on.",
            (false, false) => "`None` while a leaked `Model` of this kind still holds its state.",
            (false, true) => {
                "`None` while a leaked `Model` of this kind still holds its state, or while anything else uses what it runs on."
            }
        }
    );
    let (state_ty, state_doc, take) = if shared.state_in_arena {
        let writes = m.state.iter().filter(|f| !f.zeroed).map(|f| {
            let (name, init) = (&f.name, &f.init);
            quote!((&raw mut (*p).#name).write(#init);)
        });
        let safety = super::render::comment(
            "SAFETY: `arena` stays borrowed mutably for as long as the returned model lives, so this model \
             is the one user of the shared arena's bytes; they are zeroed (the byte arenas' start), and \
             every other field is written before the reference is made.",
        );
        let take = quote! {
            #safety
            let state = unsafe {
                let p = #arena::ARENA.zeroed_as::<State>();
                #(#writes)*
                &mut *p
            };
            #on_take
            let model = Model { state, #(#inits)* };
            Some(::mlf_runtime::InArena::new(model, arena))
        };
        (quote!(&'static mut State), " The model's static memory, in the shared arena.", take)
    } else {
        let take = quote! {
            let model = Model::take_state()?;
            Some(::mlf_runtime::InArena::new(model, arena))
        };
        (quote!(::mlf_runtime::Taken<State>), " The model's static memory, taken from [`STATE`].", take)
    };
    let take_state = if shared.state_in_arena {
        quote!()
    } else {
        let inner = if fallible || !on_take.is_empty() {
            quote! {
                let state = STATE.take()?;
                #on_take
                Some(Model { state, #(#inits)* })
            }
        } else {
            quote!(STATE.take().map(|state| Model { state, #(#inits)* }))
        };
        quote! {
            /// The model's own state (its descriptors), taken once at a time.
            fn take_state() -> Option<Model> {
                #inner
            }

            #blank
        }
    };
    [
        quote! {
            #[doc = #doc]
            pub struct Model {
                #[doc = #state_doc]
                state: #state_ty,
                #(#decls)*
            }
        },
        quote! {
            impl Model {
                #take_state
                #[doc = #shared_doc]
                pub fn take(arena: &mut #arena::Arena) -> Option<::mlf_runtime::InArena<'_, Model>> {
                    #take
                }

                #blank
                #(#methods)*

                #run_sig {
                    #run_body
                }
            }
        },
    ]
}

/// The constants of a model built for a shared arena: the arena's name, the bytes of it the
/// model uses, and compile-time checks that they fit it.
fn shared_items(shared: &Shared) -> Vec<TokenStream> {
    let (arena, name) = (shared.path(), &shared.arena);
    let name_doc = format!(
        " The shared arena this model's memory lives in: `mlf_runtime::shared_arena!({name}: …)`, beside this module."
    );
    let (bytes, bytes_doc) = if shared.state_in_arena {
        (quote!(::core::mem::size_of::<State>()), " Bytes of the shared arena this model uses: its whole state.")
    } else {
        (quote!(ARENA_BYTES), " Bytes of the shared arena this model uses: its arena ([`ARENA_BYTES`]).")
    };
    let fits =
        format!("this model is built for the shared arena `{name}` but is not listed in its shared_arena!({name}: …)");
    let mut items = vec![
        quote! {
            #[doc = #name_doc]
            #[doc(hidden)]
            pub const SHARED_ARENA: &str = #name;
        },
        quote! {
            #[doc = #bytes_doc]
            pub const SHARED_ARENA_BYTES: usize = #bytes;
        },
        quote! {
            /// This model's part fits the shared arena (checked when the module compiles).
            const _: () = assert!(SHARED_ARENA_BYTES <= #arena::BYTES, #fits);
        },
    ];
    if shared.state_in_arena {
        items.push(quote! {
            /// The state's alignment, within the arena's 64 bytes (checked when the module compiles).
            const STATE_ALIGN: usize = ::core::mem::align_of::<State>();
        });
        items.push(quote!(
            const _: () = assert!(STATE_ALIGN <= 64);
        ));
    }
    items
}

/// The module's items, each set apart by an empty line.
pub fn module(m: Module<'_>) -> Result<TokenStream> {
    let mut items = interface(m.desc, &m.name_doc)?;
    items.extend(m.consts.iter().cloned());
    items.extend(m.decls.iter().cloned());
    items.extend(m.statics.iter().cloned());
    if let Some(shared) = &m.shared {
        items.extend(shared_items(shared));
    }
    match &m.shared {
        Some(shared) if shared.state_in_arena => items.push(state(&m.state, None)[0].clone()),
        _ => items.extend(state(&m.state, m.state_section)),
    }
    items.extend(model(&m));
    let blank = blank();
    Ok(quote!(#(#items #blank)*))
}
