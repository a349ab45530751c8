//! Rust code generation: reads only the model description (and the plan), writes tokens.
//! [`pretty`] formats them with `prettyplease` when they are written to a file.

#[cfg(feature = "build")]
use proc_macro2::TokenStream;

#[cfg(feature = "build")]
use crate::error::{Error, Result};

pub mod aot;
pub mod common;
pub mod graph;
pub mod kmodel;

/// Formats generated tokens as readable Rust source. Every `unsafe {` block gets the comment
/// `// SAFETY: <safety>` above it (comments are not tokens, so they are added here).
#[cfg(feature = "build")]
pub fn pretty(tokens: &TokenStream, safety: &str) -> Result<String> {
    let file: syn::File = syn::parse2(tokens.clone())
        .map_err(|e| Error::invalid(format!("generated code does not parse (a bug in mlf): {e}")))?;
    let text = prettyplease::unparse(&file);
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.lines() {
        if line.trim() == "unsafe {" {
            let indent = &line[..line.len() - line.trim_start().len()];
            for chunk in wrap(&format!("SAFETY: {safety}"), 96 - indent.len().min(60)) {
                out.push_str(&format!("{indent}// {chunk}\n"));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(feature = "build")]
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// A `usize` literal without suffix.
pub fn usize_lit(n: usize) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(n)
}

/// A Rust identifier token.
pub fn ident(name: &str) -> proc_macro2::Ident {
    proc_macro2::Ident::new(name, proc_macro2::Span::call_site())
}
