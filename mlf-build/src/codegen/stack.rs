//! The generated constants that state the stack one `run()` needs.

use proc_macro2::TokenStream;
use quote::quote;

use super::lit;
use crate::plan::stack::{self, StackFigure};

/// `C_STACK_BYTES` and `STACK_BYTES`: the stack one run needs, from the compiler's frames of the
/// model's C and mlf's allowances (nothing when the C was not compiled), including the one for
/// the parameter source of a streamed or lazy run.
pub fn stack_consts(stack: Option<&StackFigure>) -> Vec<TokenStream> {
    let Some(s) = stack else { return Vec::new() };
    let c = lit(s.c + s.leaf);
    let bound = if s.bounded { String::new() } else { format!(" Not a bound: {}.", s.unbounded.join("; ")) };
    let c_doc = format!(
        " Bytes of stack the model's C needs in one run: its deepest call chain ({} bytes: {}, \
         from the compiler's `-fstack-usage`) plus {} bytes for a function outside the C called \
         from it (`TVMBackendAllocWorkspace`, `expf`, `memcpy`).{bound}",
        s.c,
        if s.deepest.is_empty() { "none" } else { &s.deepest },
        s.leaf
    );
    let source = s.source;
    let (release, debug) = (lit(stack::RUNTIME_BYTES + source), lit(stack::RUNTIME_DEBUG_BYTES + source));
    let source_doc = if source > 0 {
        format!(
            ", {source} of them for the parameter source's `load` (an allowance that covers mlf's \
             `FlashArchive`; a source of your own with deeper frames adds the difference)"
        )
    } else {
        String::new()
    };
    let total_doc = format!(
        " Bytes of stack one `run()` needs below its caller's frame: [`C_STACK_BYTES`] plus mlf's \
         own frames ({} bytes when optimised; {} with debug assertions, as in the dev profile{source_doc}).",
        stack::RUNTIME_BYTES + source,
        stack::RUNTIME_DEBUG_BYTES + source
    );
    vec![
        quote! {
            #[doc = #c_doc]
            pub const C_STACK_BYTES: usize = #c;
        },
        quote! {
            #[doc = #total_doc]
            pub const STACK_BYTES: usize = C_STACK_BYTES + if cfg!(debug_assertions) { #debug } else { #release };
        },
    ]
}
