//! # mlf-macros
//!
//! `include_model!("path", name = ident)`: a typed Rust module for a compiled model. Use it
//! through `mlf_runtime::include_model!` (feature `macros`).
//!
//! - A kmodel needs no build step: the macro reads it and generates the module.
//! - A TVM MLF needs `mlf_build` in `build.rs` (it compiles the model's C); the macro includes
//!   the module that step generated into `OUT_DIR`.
//!
//! Every misuse is a `compile_error!` pointing at the macro call.

use std::path::{Path, PathBuf};

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

struct Args {
    path: LitStr,
    name: Option<Ident>,
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse()?;
        let mut name = None;
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "name" => name = Some(input.parse()?),
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown option `{other}` (expected `name = <module name>`)"),
                    ))
                }
            }
        }
        Ok(Args { path, name })
    }
}

/// Includes a compiled model as a typed module.
///
/// ```ignore
/// mlf_runtime::include_model!("models/iris.kmodel", name = iris);
/// let mut model = iris::Model::take().unwrap();
/// let out = model.run(&iris::Inputs { input: &[5.1, 3.5, 1.4, 0.2] })?;
/// ```
#[proc_macro]
pub fn include_model(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as Args);
    match expand(&args) {
        Ok(t) => t.into(),
        Err(msg) => syn::Error::new(args.path.span(), msg).to_compile_error().into(),
    }
}

/// The directory model paths are relative to: the crate's manifest directory.
/// `MLF_MACROS_MANIFEST_DIR` overrides it (the UI tests set it, because trybuild compiles them
/// in a crate of its own under `target/`).
fn manifest_dir() -> Result<PathBuf, String> {
    std::env::var_os("MLF_MACROS_MANIFEST_DIR")
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from)
        .ok_or_else(|| "CARGO_MANIFEST_DIR is not set: include_model! must be used in a crate built by cargo".to_string())
}

fn expand(args: &Args) -> Result<proc_macro2::TokenStream, String> {
    let rel = args.path.value();
    let path = manifest_dir()?.join(&rel);
    if !path.exists() {
        return Err(format!("model file not found: {} (paths are relative to the crate's Cargo.toml)", path.display()));
    }
    // Errors name the file as the user wrote it.
    expand_path(args, &path).map_err(|m| m.replace(&path.display().to_string(), &rel))
}

fn expand_path(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let path = path.to_path_buf();
    let kind = mlf_build::detect::detect(&path).map_err(|e| e.to_string())?;
    match kind {
        mlf_build::detect::FileKind::Kmodel => kmodel(args, &path),
        mlf_build::detect::FileKind::Mlf => mlf(args, &path),
        _ => Err(format!("{} is not a model that can be included (it is a {kind:?} file)", path.display())),
    }
}

fn module_name(args: &Args, desc_name: &str, path: &Path) -> Ident {
    if let Some(n) = &args.name {
        return n.clone();
    }
    let base = if desc_name.is_empty() || desc_name == "default" {
        path.file_stem().and_then(|s| s.to_str()).unwrap_or("model").to_string()
    } else {
        desc_name.to_string()
    };
    Ident::new(&mlf_build::names::module_ident(&base), Span::call_site())
}

fn kmodel(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let desc = mlf_build::open(path).map_err(|e| e.to_string())?;
    let items = mlf_build::codegen::kmodel::module_tokens(&desc, path).map_err(|e| e.to_string())?;
    let name = module_name(args, &desc.name, path);
    Ok(quote! {
        #[allow(clippy::all, dead_code)]
        pub mod #name {
            #items
        }
    })
}

fn mlf(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let _ = (args, path);
    Err("TVM MLF models are not supported by include_model! yet".into())
}
