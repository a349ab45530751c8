//! The part of a TVM module that serves constant arrays taken out of the model's C: the C's
//! table of pointers (and, for a streamed or lazy AOT model, its stage hook) declared, where
//! each array lies once loaded (resident and lazy) or before each call (streamed), the binding
//! after `load`, and the run's streaming or lazy loading around the C main (AOT) or the calls
//! (graph).

use proc_macro2::TokenStream;
use quote::quote;

use super::render::comment;
use super::{lit, usize_lit};
use crate::model::Placement;
use crate::plan::graph::GraphPlan;
use crate::plan::params::{array_staging, call_staging};
use crate::plan::split::{ArrayTable, Split};

/// The C names of the table and the hook (renamed with the model's prefix like its symbols).
const TABLE: &str = ArrayTable::TABLE_SYMBOL;
const STAGE_HOOK: &str = ArrayTable::HOOK_SYMBOL;

/// What the module adds for its constant arrays.
#[derive(Default)]
pub struct ArrayCode {
    /// `mod arrays` with the C's table (and hook) declared.
    pub decls: Vec<TokenStream>,
    /// `ARRAY_BINDS` (resident), `STEPS` (streamed, lazy), the streaming cell and hook (AOT).
    pub statics: Vec<TokenStream>,
    /// Statements at the end of `load` (resident): the table pointed into the loaded region.
    pub after_load: TokenStream,
    /// Statements before the C main (AOT streamed or lazy): the hook made ready.
    pub before_call: TokenStream,
    /// Statements right after the C main returns, before its code is checked (AOT streamed or
    /// lazy).
    pub after_call: TokenStream,
}

/// The table of `split`, if its C reads constant arrays through one.
pub fn table(split: Option<&Split>) -> Option<&ArrayTable> {
    split.and_then(|s| s.arrays.as_ref()).filter(|t| !t.slots.is_empty())
}

/// `Bind { slot, offset, bytes }` for entry `slot` of `t` at `offset`.
fn bind(split: &Split, t: &ArrayTable, slot: usize, offset: u64) -> TokenStream {
    let (s, o, b) =
        (usize_lit(slot), usize_lit(offset as usize), usize_lit(split.files[t.slots[slot].1].bytes() as usize));
    quote!(::mlf_runtime::tvm::Bind { slot: #s, offset: #o, bytes: #b })
}

/// `Step { stage, bind }` for the entries `slots` staged after `base` bytes, or, with `resident`
/// (lazy placement: each file's offset in the parameter region), read to their own places.
pub fn step(split: &Split, t: &ArrayTable, slots: &[usize], base: u64, resident: Option<&[u64]>) -> TokenStream {
    let files = match resident {
        Some(offsets) => t.files_of(slots).into_iter().map(|f| (f, offsets[f])).collect(),
        None => array_staging(t, split, slots, base).0,
    };
    let stages = files.iter().map(|&(f, off)| {
        let (f, o) = (lit(f as u64), usize_lit(off as usize));
        quote!(::mlf_runtime::tvm::Stage { file: #f, offset: #o })
    });
    let binds = slots.iter().map(|&k| {
        let off = files.iter().find(|(f, _)| *f == t.slots[k].1).map_or(0, |(_, o)| *o);
        bind(split, t, k, off)
    });
    quote!(::mlf_runtime::tvm::Step { stage: &[#(#stages),*], bind: &[#(#binds),*] })
}

/// `ARRAY_BINDS`: where each array lies in the parameter region (`resident_offsets`: each file's
/// offset there).
pub fn array_binds(split: &Split, t: &ArrayTable, resident_offsets: &[u64]) -> TokenStream {
    let k = usize_lit(t.slots.len());
    let binds = (0..t.slots.len()).map(|s| bind(split, t, s, resident_offsets[t.slots[s].1]));
    quote! {
        /// Where each constant array lies in the parameter region, once loaded.
        static ARRAY_BINDS: [::mlf_runtime::tvm::Bind; #k] = [#(#binds),*];
    }
}

/// The declarations and resident binding of the arrays of `split` (`resident_offsets`: each
/// file's offset in the resident region; `hook`: whether the C calls the stage hook).
pub fn array_code(
    split: &Split,
    t: &ArrayTable,
    placement: Placement,
    symbol_prefix: &str,
    resident_offsets: &[u64],
    hook: bool,
) -> ArrayCode {
    let k = usize_lit(t.slots.len());
    let table_link = format!("{symbol_prefix}{TABLE}");
    let hook_decl = if hook && placement.reads_in_run() {
        let link = format!("{symbol_prefix}{STAGE_HOOK}");
        quote! {
            /// The function pointer the model's C main calls before each call that reads
            /// constant arrays (set only while `run()` is in the C).
            #[link_name = #link]
            pub static HOOK: ::mlf_runtime::tvm::StageHook;
        }
    } else {
        quote!()
    };
    let names: Vec<String> =
        t.slots.iter().enumerate().map(|(k, (name, f))| format!("{k}: `{name}` (`{}`)", split.files[*f].id)).collect();
    let table_doc = format!(
        " The table of pointers the model's C reads its constant arrays through (defined by that C): {}.",
        names.join(", ")
    );
    let decl_note = comment(
        "The C defines these with the same layout (`const void *[K]`, `int (*)(int)`) in `.bss`; the module writes them only through the runtime's methods, under its take-once state.",
    );
    let mut code = ArrayCode {
        decls: vec![quote! {
            /// The model's constant arrays, read by its C through a table the module points at
            /// their bytes.
            #[doc(hidden)]
            pub mod arrays {
                #decl_note
                unsafe extern "C" {
                    #[doc = #table_doc]
                    #[link_name = #table_link]
                    pub static TABLE: ::mlf_runtime::tvm::ArrayTable<#k>;
                    #hook_decl
                }
            }
        }],
        ..ArrayCode::default()
    };
    if placement == Placement::Resident {
        code.statics.push(array_binds(split, t, resident_offsets));
        let note = comment(
            "SAFETY: this `Model` holds `STATE`, which owns the table and `PARAM_REGION`, and no run is in progress.",
        );
        code.after_load = quote!(#note unsafe { arrays::TABLE.bind(&PARAM_REGION, &ARRAY_BINDS) };);
    }
    code
}

/// The streaming of a streamed AOT model: `STEPS` (one per call of the main that reads
/// arrays), the cell and hook, and the statements around the call into the C main. With
/// `resident` (lazy placement: each file's offset in the parameter region), the steps read the
/// files not loaded yet to their places there instead.
pub fn aot_streaming(split: &Split, t: &ArrayTable, resident: Option<&[u64]>, code: &mut ArrayCode) {
    let steps: Vec<TokenStream> = t.steps.iter().map(|(_, slots)| step(split, t, slots, 0, resident)).collect();
    let n = usize_lit(steps.len());
    let calls: Vec<String> = t.steps.iter().enumerate().map(|(i, (f, _))| format!("{i}: `{f}`")).collect();
    let what = match resident {
        Some(_) => "reads into the parameter region first (the files not loaded yet)",
        None => "stages first",
    };
    let doc = format!(" What each call of the C main that reads constant arrays {what}: {}.", calls.join(", "));
    let hook_safety = comment("SAFETY: the C calls the hook only while `run()` holds the guard of `STREAM`.");
    code.statics.push(quote! {
        #[doc = #doc]
        static STEPS: [::mlf_runtime::tvm::Step; #n] = [#(#steps),*];
    });
    code.statics.push(quote! {
        /// The run's parameter source, reachable by `stage_hook` only while `run()` is in the C.
        static STREAM: ::mlf_runtime::tvm::Streaming = ::mlf_runtime::tvm::Streaming::new();
    });
    code.statics.push(quote! {
        /// Called by the model's C main before each call that reads constant arrays.
        unsafe extern "C" fn stage_hook(step: ::core::ffi::c_int) -> ::core::ffi::c_int {
            #hook_safety
            unsafe { STREAM.stage(step) }
        }
    });
    let (note, region, once) = match resident {
        Some(_) => (
            "The C main reads each call's constant arrays not loaded yet through `stage_hook`, from `source`, into their places (recorded in the state).",
            quote!(PARAM_REGION),
            quote!(.loading_once(&mut self.state.loaded)),
        ),
        None => (
            "The C main stages each call's constant arrays through `stage_hook`, reading from `source`.",
            quote!(STAGING),
            quote!(),
        ),
    };
    let note = comment(note);
    let safety = comment(format!(
        "SAFETY: this `Model` holds `STATE`, which owns `STREAM`, the hook, `{region}` and the table; the guard ends before `run()` returns."
    ));
    code.before_call = quote! {
        #note
        #safety
        let stream = unsafe { STREAM.begin(source, &#region, &arrays::TABLE, &STEPS, &PARAMS, (&arrays::HOOK, stage_hook))#once };
    };
    let note = comment("A failed read stopped the C main: report it rather than the main's -1.");
    code.after_call = quote!(#note stream.end()?;);
}

/// `STEPS` of a streamed graph model: for each call, the arrays its function reads, staged after
/// its parameters; with `resident` (lazy placement: each file's offset in the parameter region),
/// read to their places there when not loaded yet.
pub fn graph_steps(split: &Split, t: &ArrayTable, plan: &GraphPlan, resident: Option<&[u64]>) -> TokenStream {
    let steps = plan.calls.iter().map(|c| {
        let base = call_staging(c, plan, split).1;
        step(split, t, t.users.get(&c.func).map_or(&[][..], Vec::as_slice), base, resident)
    });
    let n = usize_lit(plan.calls.len());
    let doc = match resident {
        Some(_) => {
            " The constant arrays each call's function reads, read into the parameter region before the first call that needs them (by call)."
        }
        None => " The constant arrays each call's function reads, staged after its parameters (by call).",
    };
    quote! {
        #[doc = #doc]
        static STEPS: [::mlf_runtime::tvm::Step; #n] = [#(#steps),*];
    }
}
