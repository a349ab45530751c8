//! Rust code generation: reads the model description and its plan, and returns the generated
//! module as tokens ([`render`] turns them into what is compiled). Nothing here touches the file
//! system: files the module embeds are named by [`IncludePath`]s the caller chooses.
//!
//! Every module is laid out by [`skeleton`]; [`graph`], [`aot`] and [`kmodel`] fill it in for
//! their executor, [`tvm`] holds what the two TVM executors share.

pub mod aot;
pub mod arrays;
pub mod graph;
pub mod kmodel;
pub mod param_refs;
pub mod profile;
pub mod relax_module;
pub mod render;
pub mod section;
pub mod skeleton;
pub mod stack;
pub mod tvm;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// A file `include_bytes!` embeds: a path under a folder cargo names in an environment variable
/// of the crate being compiled (`OUT_DIR`, `CARGO_MANIFEST_DIR`), or an absolute path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncludePath {
    /// `concat!(env!(var), path)`; `path` starts with `/`.
    InEnv {
        /// The environment variable.
        var: &'static str,
        /// The path below its folder.
        path: String,
    },
    /// An absolute path.
    Absolute(String),
}

impl IncludePath {
    /// A path below `OUT_DIR` (`/mlf/…`).
    pub fn out_dir(path: impl Into<String>) -> IncludePath {
        IncludePath::InEnv { var: "OUT_DIR", path: path.into() }
    }

    /// The argument of `include_bytes!`.
    pub fn tokens(&self) -> TokenStream {
        match self {
            IncludePath::InEnv { var, path } => quote!(concat!(env!(#var), #path)),
            IncludePath::Absolute(path) => quote!(#path),
        }
    }

    /// The file's name.
    pub fn file_name(&self) -> &str {
        let path = match self {
            IncludePath::InEnv { path, .. } | IncludePath::Absolute(path) => path,
        };
        path.rsplit(['/', '\\']).next().unwrap_or(path)
    }
}

/// A `usize` literal without suffix.
pub fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// An integer literal without suffix.
pub fn lit(n: u64) -> Literal {
    Literal::u64_unsuffixed(n)
}

/// A Rust identifier token.
pub fn ident(name: &str) -> proc_macro2::Ident {
    proc_macro2::Ident::new(name, proc_macro2::Span::call_site())
}
