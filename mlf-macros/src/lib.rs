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
    module: Option<LitStr>,
    params: Option<mlf_build::Placement>,
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse()?;
        let mut name = None;
        let mut module = None;
        let mut params = None;
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "name" => name = Some(input.parse()?),
                "module" => module = Some(input.parse()?),
                "params" => {
                    let p: LitStr = input.parse()?;
                    let placement = p.value().parse::<mlf_build::Placement>();
                    params = Some(placement.map_err(|e| syn::Error::new(p.span(), e))?);
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown option `{other}` (expected `name = <module name>`, `module = \"<MLF module>\"` or `params = \"embedded\"|\"resident\"|\"streamed\"`)"
                        ),
                    ));
                }
            }
        }
        Ok(Args { path, name, module, params })
    }
}

/// Includes a compiled model as a typed module.
///
/// ```ignore
/// mlf_runtime::include_model!("models/iris.kmodel", name = iris);
/// // an MLF with several modules: pick one (build.rs uses `.module("vision")` too)
/// mlf_runtime::include_model!("models/two.tar", module = "vision");
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
        .ok_or_else(|| {
            "CARGO_MANIFEST_DIR is not set: include_model! must be used in a crate built by cargo".to_string()
        })
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
    let kind = mlf_build::read::detect::detect(&path).map_err(|e| e.to_string())?;
    match kind {
        mlf_build::read::detect::FileKind::Kmodel => kmodel(args, &path),
        mlf_build::read::detect::FileKind::Mlf => mlf(args, &path),
        _ => Err(format!("{} is not a model that can be included (it is a {kind:?} file)", path.display())),
    }
}

/// The only element of a vector, if it has exactly one.
trait PopSingle<T> {
    fn pop_single(self) -> Option<T>;
}

impl<T> PopSingle<T> for Vec<T> {
    fn pop_single(mut self) -> Option<T> {
        if self.len() == 1 { self.pop() } else { None }
    }
}

fn kmodel(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let include = path.to_str().ok_or_else(|| format!("{}: model path is not UTF-8", path.display()))?;
    let (default_name, items) = mlf_build::build::include::kmodel_module(path, include).map_err(|e| e.to_string())?;
    let name = args.name.clone().unwrap_or_else(|| Ident::new(&default_name, Span::call_site()));
    Ok(quote! {
        #[allow(clippy::all, dead_code)]
        pub mod #name {
            #items
        }
    })
}

fn mlf(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let rel = args.path.value();
    let module = args.module.as_ref().map(LitStr::value);
    let module_call = module.as_ref().map(|m| format!(".module({m:?})")).unwrap_or_default();
    let build_step = format!(
        "add a build step to build.rs:\n    mlf_build::Model::open({rel:?}){module_call}.compile().unwrap_or_else(|e| panic!(\"{{e}}\"));\n(with mlf-build in [build-dependencies])"
    );
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return Err(format!(
            "{rel} is a TVM model: its C must be compiled first, and this crate has no build script; {build_step}"
        ));
    };
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let canonical = path.canonicalize().map_err(|e| format!("{}: {e}", path.display()))?;
    let base = mlf_build::build::layout::model_key(&pkg, &canonical, module.as_deref());
    let placement_key = mlf_build::build::layout::placement_key;
    let dir = PathBuf::from(out_dir).join("mlf");
    // The build step writes `<key>.rs` for embedded parameters and `<key>-resident.rs` /
    // `<key>-streamed.rs` for external ones; `params = …` chooses, else the only one built.
    let key = match args.params {
        Some(p) => placement_key(&base, p),
        None => mlf_build::Placement::ALL
            .into_iter()
            .map(|p| placement_key(&base, p))
            .filter(|k| dir.join(format!("{k}.rs")).is_file())
            .collect::<Vec<_>>()
            .pop_single()
            .unwrap_or(base.clone()),
    };
    let rs = dir.join(format!("{key}.rs"));
    let sidecar_path = dir.join(format!("{key}.json"));
    let sidecar: mlf_build::build::layout::Sidecar = match std::fs::read(&sidecar_path) {
        Ok(b) if rs.is_file() => serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", sidecar_path.display()))?,
        _ => return Err(format!("build.rs did not build {rel}; {build_step}")),
    };
    let now = mlf_build::build::layout::fingerprint(&canonical).map_err(|e| e.to_string())?;
    if now != sidecar.fingerprint {
        return Err(format!(
            "{rel} changed since build.rs generated its module, and build.rs no longer builds it; {build_step}"
        ));
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None => Ident::new(&sidecar.module, Span::call_site()),
    };
    let file = rs.display().to_string();
    let doc = sidecar.summary;
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::all, dead_code, non_upper_case_globals)]
        pub mod #name {
            include!(#file);
        }
    })
}
