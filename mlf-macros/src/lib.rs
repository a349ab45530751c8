//! # mlf-macros
//!
//! `include_model!("path", name = ident)`: a typed Rust module for a compiled model. Use it
//! through `mlf_runtime::include_model!` (feature `macros`).
//!
//! - A kmodel needs no build step: the macro reads it and generates the module.
//! - A TVM MLF needs `mlf_build` in `build.rs` (it compiles the model's C); the macro includes
//!   the module that step generated into `OUT_DIR`.
//! - `kpu = k210` runs a kmodel's KPU layers on the K210's own KPU (mlf-runtime's feature
//!   `k210`, which turns on this crate's feature of the same name); `kpu = device_model` (the
//!   default) on mlf's device model of it.
//!
//! Every misuse is a `compile_error!` pointing at the macro call.

use std::path::{Path, PathBuf};

use mlf_build::__private::codegen::{IncludePath, render};
use mlf_build::__private::{FileKind, NotLocated};
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
    kpu: Option<(mlf_build::Kpu, Span)>,
    max_static: Option<u64>,
    arena: Option<(String, Span)>,
    /// `arena_section` and `params_section`: the link sections of the arena and parameters.
    sections: [Option<String>; 2],
}

/// An option's value written either way: a word (`streamed`, `my_model`) or a string literal
/// (`"streamed"`, `"my_model"`), and for sizes a number. Returns the text and its span.
fn word_or_string(input: ParseStream<'_>, key: &Ident) -> syn::Result<(String, Span)> {
    if input.peek(LitStr) {
        let s: LitStr = input.parse()?;
        return Ok((s.value(), s.span()));
    }
    if input.peek(syn::LitInt) {
        let n: syn::LitInt = input.parse()?;
        return Ok((n.base10_digits().to_string(), n.span()));
    }
    if input.peek(Ident) || input.peek(Token![self]) {
        let w: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        return Ok((w.to_string(), w.span()));
    }
    Err(syn::Error::new(input.span(), format!("expected a value for `{key}`\nhelp: {}", option_help(&key.to_string()))))
}

/// How an option is written, for `help:` lines.
fn option_help(key: &str) -> &'static str {
    match key {
        "name" => "`name = my_model` (or `name = \"my_model\"`): the Rust module's name",
        "module" => "`module = \"vision\"` (or `module = vision`): the MLF module of an archive that holds several",
        "params" => "`params = streamed` (or `params = \"streamed\"`): embedded, resident, streamed or lazy",
        "kpu" => "`kpu = k210` (or `kpu = \"k210\"`): k210 or device_model",
        "max_static" => {
            "`max_static = \"256 MiB\"` (or a number of bytes): the most static memory the module may allocate"
        }
        "arena" => {
            "`arena = detect` (or `arena = \"detect\"`): the shared arena the model's memory is in, declared beside it with `mlf_runtime::shared_arena!(detect: …)`"
        }
        "arena_section" => {
            "`arena_section = \".dtcm\"`: the link section the model's arena goes in, which the linker script places in a memory region"
        }
        "params_section" => {
            "`params_section = \".psram_ro\"`: the link section the model's parameters go in, which the linker script places in a memory region"
        }
        _ => {
            "the options are name, module, params, kpu, max_static, arena, arena_section and params_section (see include_model!'s documentation)"
        }
    }
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse()?;
        let mut args = Args {
            path,
            name: None,
            module: None,
            params: None,
            kpu: None,
            max_static: None,
            arena: None,
            sections: [None, None],
        };
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            let key_text = key.to_string();
            if !input.peek(Token![=]) {
                return Err(syn::Error::new(
                    key.span(),
                    format!("expected `{key} = …`\nhelp: {}", option_help(&key_text)),
                ));
            }
            input.parse::<Token![=]>()?;
            let (value, span) = word_or_string(input, &key)?;
            let fail = |what: String| syn::Error::new(span, format!("{what}\nhelp: {}", option_help(&key_text)));
            match key_text.as_str() {
                "name" => {
                    let ident = syn::parse_str::<Ident>(&value)
                        .map_err(|_| fail(format!("`{value}` is not a Rust identifier, so it cannot name a module")))?;
                    args.name = Some(Ident::new(&ident.to_string(), span));
                }
                "module" => args.module = Some(LitStr::new(&value, span)),
                "params" => args.params = Some(value.parse::<mlf_build::Placement>().map_err(|e| fail(e.to_string()))?),
                "kpu" => {
                    let backend = value.parse::<mlf_build::Kpu>().map_err(|_| {
                        fail(format!("unknown KPU backend `{value}` (expected `k210` or `device_model`)"))
                    })?;
                    args.kpu = Some((backend, span));
                }
                "max_static" => {
                    let bytes = mlf_build::__private::size::parse_size(&value);
                    args.max_static = Some(bytes.map_err(|e| fail(e.to_string()))?);
                }
                "arena" => {
                    if !mlf_build::__private::names::is_identifier(&value) {
                        return Err(fail(format!(
                            "`{value}` is not a Rust identifier, so it cannot name a shared arena's module"
                        )));
                    }
                    args.arena = Some((value, span));
                }
                "arena_section" | "params_section" => {
                    mlf_build::__private::section::check(&value).map_err(fail)?;
                    args.sections[usize::from(key_text == "params_section")] = Some(value);
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown option `{other}` (expected `name = <module name>`, `module = \"<MLF module>\"`, `params = \"embedded\"|\"resident\"|\"streamed\"|\"lazy\"`, `kpu = k210|device_model`, `max_static = \"<size>\"`, `arena = <shared arena>`, `arena_section = \"<link section>\"` or `params_section = \"<link section>\"`)"
                        ),
                    ));
                }
            }
        }
        Ok(args)
    }
}

/// Includes a compiled model as a typed module: `include_model!("path" [, option = value]…)`.
///
/// The path is relative to the crate's `Cargo.toml`: an MLF archive (`.tar` or extracted
/// folder), which `build.rs` must build first (`mlf_build::compile_listed_or_exit()` for the
/// models of `[package.metadata.mlf]`, or `mlf_build::Model::open(path)….compile_or_exit()`),
/// or a kmodel, which needs no build step. Every option may be written as a word or as a string
/// (`params = streamed` or `params = "streamed"`):
///
/// | option | value | default |
/// |---|---|---|
/// | `name` | the Rust module's name: `name = digits` | the MLF module's name, or the file stem when TVM called it `default` and for kmodels |
/// | `module` | the MLF module of an archive that holds several: `module = "vision"` (as `.module("vision")` in build.rs) | the archive's only module |
/// | `params` | where the parameters live: `embedded`, `resident`, `streamed` or `lazy`; must be the placement build.rs builds the model with | `embedded`, or the one placement build.rs built |
/// | `kpu` | kmodels: where the KPU layers run, `device_model` (emulated, any CPU) or `k210` (the chip's KPU; mlf-runtime's feature `k210`) | `device_model` |
/// | `max_static` | the most static memory the module may allocate (kmodels; TVM models set it in build.rs): `max_static = "512 MiB"` or bytes | 256 MiB |
/// | `arena` | the shared arena the model's memory is in: the module `mlf_runtime::shared_arena!(detect: …)` declares beside this one; `Model::take(&mut arena)` then borrows the arena's handle. TVM models: build.rs must build it so (`.shared_arena("detect")`, `arena = "detect"` in `[package.metadata.mlf]`) | an arena of its own |
/// | `arena_section` | the link section the model's arena goes in (a TVM model's `ARENA`, a kmodel's state), which the firmware's linker script places in a memory region: `arena_section = ".dtcm"`. Letters, digits, `.`, `_`, `$`. TVM models: build.rs builds it so (`.arena_section(".dtcm")`, `arena_section = ".dtcm"` in `[package.metadata.mlf]`), and the macro, if it says one, must say the same. A NOLOAD section is neither loaded nor zeroed at reset: fine for a TVM arena, not for a kmodel's state (its section must be initialised like `.data`) | the compiler's (`.bss`) |
/// | `params_section` | the link section the model's parameters go in: embedded parameters (a kmodel's file; a TVM model's `.incbin` data) or the static region external ones load into: `params_section = ".psram_ro"`. TVM models: as for `arena_section` (`.params_section(…)` in build.rs) | the compiler's (`.rodata`, or `.bss` for a region) |
///
/// ```ignore
/// mlf_runtime::include_model!("models/iris.kmodel", name = iris);
/// // an MLF with several modules: pick one (build.rs uses `.module("vision")` too)
/// mlf_runtime::include_model!("models/two.tar", module = "vision");
/// // a kmodel's KPU layers on the K210's own KPU (mlf-runtime's feature `k210`)
/// mlf_runtime::include_model!("models/yolo.kmodel", name = yolo, kpu = k210);
/// // the arena in a second RAM region (memory.x: `.dtcm (NOLOAD) : { *(.dtcm) } > DTCM`)
/// mlf_runtime::include_model!("models/kws.tar", arena_section = ".dtcm");
/// let mut model = iris::Model::take().unwrap();
/// let out = model.run(&iris::Inputs { input: &[5.1, 3.5, 1.4, 0.2] })?;
/// ```
#[proc_macro]
pub fn include_model(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as Args);
    if let Some((mlf_build::Kpu::K210, span)) = args.kpu.filter(|_| !cfg!(feature = "k210")) {
        let msg = "`kpu = k210` runs the KPU layers on the K210's own KPU, which needs mlf-runtime's feature `k210`: mlf-runtime = { …, features = [\"macros\", \"k210\"] }";
        return syn::Error::new(span, msg).to_compile_error().into();
    }
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
    // A model the build step built, unchanged since (its stamp matches): a TVM model, and the
    // macro reads none of its bytes (a model of hundreds of MiB, on every expansion).
    if built_and_unchanged(args, &path) {
        return mlf(args, &path);
    }
    // The first bytes tell a kmodel from a TVM model; what a tar holds is the build step's to
    // read (it says what is wrong with a tar that is not a model).
    let kind = mlf_build::__private::sniff(&path).map_err(|e| e.to_string())?;
    match kind {
        FileKind::Kmodel => kmodel(args, &path),
        FileKind::Mlf => mlf(args, &path),
        // A Relax export (TVM 0.25–0.27) is built by the build step like an MLF archive; the
        // build step says why any other export cannot be.
        FileKind::TvmModule => mlf(args, &path),
        FileKind::Params => Err(not_a_model(&path, "a TVM parameter file")),
        FileKind::ParamPack => Err(not_a_model(&path, "a folder or archive of external parameters (cargo mlf split)")),
    }
}

/// Whether the build step built the model at `path` (with this call's placement, or its only
/// one) and its stamp still matches: compared by file sizes and times alone.
fn built_and_unchanged(args: &Args, path: &Path) -> bool {
    let Some(out_dir) = std::env::var_os("OUT_DIR") else { return false };
    if args.kpu.is_some() {
        return false;
    }
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let module = args.module.as_ref().map(LitStr::value);
    mlf_build::__private::locate(Path::new(&out_dir), &pkg, path, module.as_deref(), args.params).is_ok()
}

/// The error for a file mlf reads that is not a model (`what` says what it is).
fn not_a_model(path: &Path, what: &str) -> String {
    format!(
        "{} is {what}, not a model that can be included: include_model! takes an MLF archive, a Relax export or a kmodel (`cargo mlf inspect` shows what the file holds)",
        path.display()
    )
}

/// Where the generated module embeds the model file from: the path as written, below the
/// crate's folder (`concat!(env!("CARGO_MANIFEST_DIR"), "/…")`), unless it is absolute or the
/// test hook moved the folder.
fn include_path(args: &Args, path: &Path) -> Result<IncludePath, String> {
    let rel = args.path.value();
    let hooked = std::env::var_os("MLF_MACROS_MANIFEST_DIR").is_some();
    if Path::new(&rel).is_relative() && !hooked {
        return Ok(IncludePath::InEnv { var: "CARGO_MANIFEST_DIR", path: format!("/{rel}") });
    }
    let path = path.to_str().ok_or_else(|| format!("{}: model path is not UTF-8", path.display()))?;
    Ok(IncludePath::Absolute(path.to_string()))
}

fn kmodel(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let kpu = args.kpu.map_or(mlf_build::Kpu::DeviceModel, |(k, _)| k);
    let include = include_path(args, path)?;
    let limit = args.max_static.unwrap_or(mlf_build::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES);
    let sections = mlf_build::__private::codegen::Sections {
        arena: args.sections[0].as_deref(),
        params: args.sections[1].as_deref(),
    };
    let arena = args.arena.as_ref().map(|(a, _)| a.as_str());
    let (default_name, items) = mlf_build::__private::kmodel_module_in(path, &include, kpu, limit, (arena, sections))
        .map_err(|e| e.to_string())?;
    let items = render::tokens(items);
    let name = args.name.clone().unwrap_or_else(|| Ident::new(&default_name, Span::call_site()));
    let doc = format!("The kmodel `{}`.\n\n{USAGE_DOC}", args.path.value());
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::all, dead_code)]
        pub mod #name {
            #items
        }
    })
}

/// The second paragraph of every generated module's documentation: the items a user needs
/// first (rustdoc lists items by kind and name; internals are `#[doc(hidden)]`).
const USAGE_DOC: &str = "Start with [`Model`]: `Model::take()` hands out the model's static memory (once at a time), \
     and `run(&Inputs { … })` runs it and returns its [`Outputs`] (see [`Inputs`]). [`ARENA_BYTES`] is all the static \
     RAM the module allocates, [`STACK_BYTES`] the stack one run needs below its caller; the `*_SHAPE` constants \
     give each tensor's shape.";

/// The name of the macro whose definition makes a second `include_model!` of the same build
/// step (the same compiled C: one model file, module and placement) a compile error: it says
/// why, and ends with a hash of the step (of the model's path relative to the crate, so the name
/// is the same on every machine).
fn included_once_marker(args: &Args, path: &Path, span: Span) -> Result<Ident, String> {
    let crate_dir = manifest_dir()?;
    let canonical = |p: &Path| p.canonicalize().map_err(|e| format!("{}: {e}", p.display()));
    let rel = relative(&canonical(&crate_dir)?, &canonical(path)?);
    let step = format!(
        "{}\0{}\0{:?}",
        rel,
        args.module.as_ref().map(LitStr::value).unwrap_or_default(),
        args.params.unwrap_or_default()
    );
    let hash = xxhash_rust::xxh64::xxh64(step.as_bytes(), 0);
    Ok(Ident::new(&format!("include_model_of_one_compiled_C_twice_would_share_its_state_{hash:016x}"), span))
}

/// The placements build.rs built `path` with in its latest run (the variables it set).
fn built_placements(out_dir: &Path, pkg: &str, path: &Path, module: Option<&str>) -> Vec<mlf_build::Placement> {
    let Ok(canonical) = path.canonicalize() else { return Vec::new() };
    let built = |p: &mlf_build::Placement| {
        let layout = mlf_build::__private::Layout::new(out_dir, pkg, &canonical, module, *p);
        std::env::var_os(layout.built_env()).is_some()
    };
    mlf_build::Placement::ALL.into_iter().filter(built).collect()
}

/// The error for a call whose placement (`asked`, written or the default) is not the one
/// build.rs builds the model with (`built`).
fn placement_mismatch(
    rel: &str,
    asked: mlf_build::Placement,
    written: Option<mlf_build::Placement>,
    built: &[mlf_build::Placement],
) -> String {
    let list = built.iter().map(|p| format!("params = {p}")).collect::<Vec<_>>().join(" and ");
    let how = if written.is_some() { "" } else { " (the default)" };
    format!(
        "build.rs builds {rel} with {list}, but this include_model! asks for params = {asked}{how}: the two must agree\n\
         help: write `include_model!({rel:?}, params = {first})`, or build it with `.params(mlf_build::Placement::{asked:?})` \
         (params = \"{asked}\" in [package.metadata.mlf]) in build.rs",
        first = built[0]
    )
}

/// The error for a call whose `arena = …` is not the shared arena build.rs built the model for.
fn arena_mismatch(rel: &str, asked: Option<&str>, built: Option<&str>) -> String {
    let said = |a: Option<&str>| a.map_or("an arena of its own".to_string(), |a| format!("the shared arena `{a}`"));
    let fix = match (asked, built) {
        (_, Some(b)) => format!("write `include_model!({rel:?}, arena = {b})`"),
        (_, None) => format!("write `include_model!({rel:?})`"),
    };
    let build = match asked {
        Some(a) => {
            format!("build it with `.shared_arena({a:?})` (arena = \"{a}\" in [package.metadata.mlf]) in build.rs")
        }
        None => "build it without `.shared_arena(…)` in build.rs".to_string(),
    };
    format!(
        "build.rs builds {rel} with {}, but this include_model! asks for {}: the two must agree\nhelp: {fix}, or {build}",
        said(built),
        said(asked)
    )
}

/// The error for a call whose `arena_section` or `params_section` is not the one build.rs built
/// the model with (`built`); a call that says none takes build.rs's.
fn section_mismatch(rel: &str, built: [Option<String>; 2], asked: &[Option<String>; 2]) -> Result<(), String> {
    for (key, (built, asked)) in ["arena_section", "params_section"].iter().zip(built.iter().zip(asked)) {
        let Some(asked) = asked else { continue };
        if built.as_ref() != Some(asked) {
            let said = built.as_ref().map_or("no link section".to_string(), |s| format!("{key} = {s:?}"));
            return Err(format!(
                "build.rs builds {rel} with {said}, but this include_model! asks for {key} = {asked:?}: the two must agree\n\
                 help: build it with `.{key}({asked:?})` ({key} = {asked:?} in [package.metadata.mlf]) in build.rs, \
                 or leave {key} out of include_model! (it then takes build.rs's)"
            ));
        }
    }
    Ok(())
}

/// `to` relative to `from` (both absolute), with `/` separators.
fn relative(from: &Path, to: &Path) -> String {
    let (a, b): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let ups = std::iter::repeat_n("..".to_string(), a.len() - common);
    let downs = b[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned());
    ups.chain(downs).collect::<Vec<_>>().join("/")
}

fn mlf(args: &Args, path: &Path) -> Result<proc_macro2::TokenStream, String> {
    let rel = args.path.value();
    if args.kpu.is_some() {
        return Err(format!("{rel} is a TVM model: `kpu = …` chooses where a kmodel's KPU layers run"));
    }
    let module = args.module.as_ref().map(LitStr::value);
    let mut module_call = module.as_ref().map(|m| format!(".module({m:?})")).unwrap_or_default();
    if let Some(p) = args.params.filter(|p| p.is_external()) {
        module_call.push_str(&format!(".params(mlf_build::Placement::{p:?})"));
    }
    let build_step = format!(
        "add a build step to build.rs:\n    mlf_build::Model::open({rel:?}){module_call}.compile_or_exit();\n(with mlf-build in [build-dependencies])"
    );
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return Err(format!(
            "{rel} is a TVM model: its C must be compiled first, and this crate has no build script; {build_step}"
        ));
    };
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    // build.rs builds the model, but with another placement than this call asks for: say both
    // (the module of this call's placement may be an earlier build's, or missing).
    let other_placement = || {
        let asked = args.params.unwrap_or_default();
        let built = built_placements(Path::new(&out_dir), &pkg, path, module.as_deref());
        (!built.is_empty() && !built.contains(&asked)).then(|| placement_mismatch(&rel, asked, args.params, &built))
    };
    let located = match mlf_build::__private::locate(Path::new(&out_dir), &pkg, path, module.as_deref(), args.params) {
        Ok(l) => l,
        Err(NotLocated::NotBuilt | NotLocated::Stale) if let Some(m) = other_placement() => return Err(m),
        Err(NotLocated::NotBuilt) => return Err(format!("build.rs did not build {rel}; {build_step}")),
        Err(NotLocated::Stale) => {
            return Err(format!(
                "{rel} changed since build.rs generated its module, and build.rs no longer builds it; {build_step}"
            ));
        }
        Err(NotLocated::Unreadable(e)) => return Err(e.to_string()),
    };
    if std::env::var_os(&located.built_env).is_none() {
        if let Some(m) = other_placement() {
            return Err(m);
        }
        return Err(format!(
            "build.rs no longer builds {rel}: its module from an earlier build is still in OUT_DIR, but its C is \
             not linked any more; {build_step}"
        ));
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None => Ident::new(&located.module, Span::call_site()),
    };
    let built_arena = mlf_build::__private::built_shared_arena(&located.rust_file);
    let asked_arena = args.arena.as_ref().map(|(a, _)| a.clone());
    if built_arena != asked_arena {
        return Err(arena_mismatch(&rel, asked_arena.as_deref(), built_arena.as_deref()));
    }
    let (arena_section, params_section) = mlf_build::__private::built_sections(&located.rust_file);
    section_mismatch(&rel, [arena_section, params_section], &args.sections)?;
    let file = located.rust_file_in_out_dir;
    let doc = format!("{}\n\n{USAGE_DOC}", located.summary);
    let once = included_once_marker(args, path, args.path.span())?;
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::all, dead_code, non_upper_case_globals)]
        pub mod #name {
            include!(concat!(env!("OUT_DIR"), #file));
        }
        // The compiled C of a build step may hold state of its own (a USMP pool, C statics): two
        // modules calling it could run at once on that one state. One inclusion per build step:
        // a second one defines this macro again, which the compiler refuses, naming both calls.
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #once { () => {}; }
    })
}
