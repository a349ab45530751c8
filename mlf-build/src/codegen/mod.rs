//! Rust code generation: reads only the model description (and the plan), writes tokens.
//! [`pretty`] formats them with `prettyplease` when they are written to a file.

use proc_macro2::TokenStream;

use crate::error::{Error, Result};

pub mod kmodel;

/// Formats generated tokens as readable Rust source.
pub fn pretty(tokens: &TokenStream) -> Result<String> {
    let file: syn::File = syn::parse2(tokens.clone())
        .map_err(|e| Error::invalid(format!("generated code does not parse (a bug in mlf): {e}")))?;
    Ok(prettyplease::unparse(&file))
}

/// A Rust identifier token.
pub fn ident(name: &str) -> proc_macro2::Ident {
    proc_macro2::Ident::new(name, proc_macro2::Span::call_site())
}
