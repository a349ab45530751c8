//! The `build.rs` API: open a model, choose parameter placement, compile its C for `$TARGET`,
//! and write the generated Rust module and aligned parameter files into `OUT_DIR`, where
//! `include_model!` finds them.
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     mlf_build::Model::open("models/digits.tar")
//!         .params(mlf_build::Placement::Embedded)
//!         .compile_or_exit(); // an error ends the build script with cargo's error, no panic
//! }
//! ```

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compile::{self, CompileJob, write_if_changed};
use super::layout::{Layout, Stamp};
use super::libraries::UserLibraries;
use super::measure::measure_library;
use super::runnable;
use super::split_folder::write_folder;
use crate::backend::{self, Generate, Generated, Toolchain};
use crate::codegen::render;
use crate::codegen::section::Sections;
use crate::codegen::tvm::ParamCode;
use crate::error::{Context, Error, Result};
use crate::model::{ModelDesc, Placement};
use crate::plan::params::object_offsets;
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;
use crate::read::mlf::ReadOptions;
use crate::support::hash::{FNV_OFFSET, fnv1a};
use crate::support::names;

/// A model to build, configured by chained calls and built by [`Model::compile`].
pub struct Model {
    pub(super) path: PathBuf,
    pub(super) module: Option<String>,
    name: Option<String>,
    params: Placement,
    split_dir: Option<PathBuf>,
    pack_key: Option<PathBuf>,
    fp_contract: bool,
    in_place: bool,
    rustflags: Option<Vec<String>>,
    max_static: u64,
    configure: Option<ConfigureCc>,
    shared_arena: Option<String>,
    arena_section: Option<String>,
    params_section: Option<String>,
    pub(super) profile: Option<bool>,
    pub(super) libs: UserLibraries,
}

/// Where a build script learns that `mlf-runtime` is built with its `profile` feature (its
/// build script's `links` metadata).
pub(super) const PROFILE_ENV: &str = "DEP_MLF_RUNTIME_PROFILE";

/// The user's adjustment of the `cc::Build` that compiles a model's C.
type ConfigureCc = Box<dyn Fn(&mut cc::Build)>;

/// What [`Model::compile`] produced.
#[derive(Clone, Debug, Serialize)]
pub struct Built {
    /// The model file (canonical path).
    pub model: PathBuf,
    /// The generated Rust module (items of the module `include_model!` declares).
    pub rust_file: PathBuf,
    /// The module name `include_model!` uses when none is given.
    pub module: String,
    /// Static RAM the generated module allocates, in bytes.
    pub arena_bytes: u64,
    /// Bytes of parameters embedded in the program image.
    pub embedded_param_bytes: u64,
    /// Bytes of external parameter files (distinct), 0 when embedded.
    pub external_param_bytes: u64,
    /// Static RAM for external parameters: the resident region or the streaming staging buffer.
    pub param_ram_bytes: u64,
    /// With external parameters, the bytes of constants left in the code: constant arrays left
    /// in the C because they are smaller than their reference would be (under 32 bytes each),
    /// and the read-only data left in LLVM objects (literal pools, sections under 32 bytes or
    /// holding addresses or exported symbols).
    pub param_bytes_kept_in_code: u64,
    /// The C library compiled for the model, if any.
    pub library: Option<PathBuf>,
    /// The memory report of what was built, before the library is measured ([`Built::report`]).
    #[serde(skip)]
    unmeasured: MemoryReport,
    /// Where the build put its files.
    #[serde(skip)]
    layout: Layout,
}

impl Built {
    /// The memory report of what was built (for the target it was built for), with the
    /// compiled library measured: the figures of the model and the plan the build used.
    pub fn report(&self) -> Result<MemoryReport> {
        let sections = self.library.as_deref().map(measure_library).transpose()?;
        let mut r = self.unmeasured.clone();
        r.apply_sections(sections);
        Ok(r)
    }

    /// Where the memory report of what was built is kept (beside the generated module).
    pub fn report_file(&self) -> PathBuf {
        self.layout.report_file()
    }
}

impl Model {
    /// A model at `path` (relative paths are resolved from `CARGO_MANIFEST_DIR`).
    pub fn open(path: impl AsRef<Path>) -> Model {
        Model {
            path: path.as_ref().to_path_buf(),
            module: None,
            name: None,
            params: Placement::Embedded,
            split_dir: None,
            pack_key: None,
            fp_contract: false,
            in_place: true,
            rustflags: None,
            max_static: crate::plan::limits::DEFAULT_MAX_STATIC_BYTES,
            configure: None,
            shared_arena: None,
            arena_section: None,
            params_section: None,
            profile: None,
            libs: UserLibraries::default(),
        }
    }

    /// Builds the model for per-operator profiling (`docs/profiling.md`), or not. By default a
    /// build script profiles when `mlf-runtime` has its `profile` feature. Only AOT models
    /// change: their main's C calls the module's hook around each kernel call (graph and kmodel
    /// models are profiled by the runtime). Profiling needs `mlf-runtime`'s `profile` feature.
    pub fn profile(mut self, on: bool) -> Model {
        self.profile = Some(on);
        self
    }

    /// Chooses a module of an MLF that holds several.
    pub fn module(mut self, name: impl Into<String>) -> Model {
        self.module = Some(name.into());
        self
    }

    /// Chooses the module name `include_model!` uses when it is not given one (default: the
    /// model's name, or the file stem when TVM called it `default`).
    pub fn name(mut self, name: impl Into<String>) -> Model {
        self.name = Some(name.into());
        self
    }

    /// Chooses where the parameters live (default: [`Placement::Embedded`]).
    ///
    /// External placements put every parameter in its own file named by a content-derived
    /// identifier, read at run time through a `mlf_runtime::params::ParamSource`; the generated
    /// code holds only identifiers, sizes and hashes.
    pub fn params(mut self, placement: Placement) -> Model {
        self.params = placement;
        self
    }

    /// With external parameters, also writes the parameter files and `configure.json` into
    /// `dir` (what `cargo mlf split` does); by default nothing is written for them.
    pub fn split_dir(mut self, dir: impl Into<PathBuf>) -> Model {
        self.split_dir = Some(dir.into());
        self
    }

    /// With external parameters, makes the generated module accept only parameter packs signed
    /// with the private key of the Ed25519 public key in `pem` (a PEM file, `-----BEGIN PUBLIC
    /// KEY-----`, as `cargo mlf keygen` or `openssl pkey -pubout` write it): the key is compiled
    /// into the module's `PACK`, and `FlashArchive::open` and `Slots::open` refuse a pack that is
    /// unsigned or signed with another key. `pack_key = "…"` in `[package.metadata.mlf.models]`.
    pub fn pack_key(mut self, pem: impl Into<PathBuf>) -> Model {
        self.pack_key = Some(pem.into());
        self
    }

    /// Lets the C compiler contract `a*b+c` into fused multiply-adds (`true`: the compiler's
    /// own default, a little faster on FPUs with FMA, e.g. Cortex-M4F). By default (`false`)
    /// mlf compiles the model's C with `-ffp-contract=off`, so float outputs are bit-identical
    /// on every target and to the reference vectors; with contraction they differ in the last
    /// bits on targets with FMA. `fp_contract = true` in the model's `[package.metadata.mlf]`
    /// entry does the same.
    pub fn fp_contract(mut self, allow: bool) -> Model {
        self.fp_contract = allow;
        self
    }

    /// Lets an operator's output take the bytes of an input that dies at that operator where
    /// the kernel's C proves that its stores never clobber an element still to be read (`true`,
    /// the default: the arena may go below the liveness bound at tensor granularity; see
    /// `docs/memory.md`). `false` plans every tensor apart, as before. `in_place = false` in
    /// the model's `[package.metadata.mlf]` entry does the same.
    pub fn in_place(mut self, on: bool) -> Model {
        self.in_place = on;
        self
    }

    /// Puts the model's arena in the shared arena `name`, which the crate declares beside the
    /// model's module with `mlf_runtime::shared_arena!(name: model, other, …)`: one static sized
    /// to the largest of its models, used by one model at a time (`Model::take(&mut arena)`
    /// borrows the arena's handle). `include_model!` must say the same (`arena = name`);
    /// `arena = "name"` in the model's `[package.metadata.mlf]` entry does the same as this.
    pub fn shared_arena(mut self, name: impl Into<String>) -> Model {
        self.shared_arena = Some(name.into());
        self
    }

    /// Puts the model's arena in the link section `section` (`".dtcm"`, `".psram"`), which the
    /// firmware's linker script places in a memory region: a TVM model's `ARENA` static, a
    /// kmodel's state. A NOLOAD section is neither loaded nor zeroed at reset, which a TVM arena
    /// does not need. `arena_section = "…"` in the model's `[package.metadata.mlf]` entry does
    /// the same; `include_model!(…, arena_section = "…")`, if it says one, must say the same.
    /// A model on a shared arena takes the arena's section (`shared_arena!(… in "…")`).
    pub fn arena_section(mut self, section: impl Into<String>) -> Model {
        self.arena_section = Some(section.into());
        self
    }

    /// Puts the model's parameters in the link section `section`: embedded parameters (the
    /// `.incbin` assembly's section, read-only data on ELF targets) or the static region
    /// external ones are loaded into (`PARAM_REGION`, `STAGING`). Constants the model's C holds
    /// itself stay where its compiler puts them. `params_section = "…"` in the model's
    /// `[package.metadata.mlf]` entry does the same.
    pub fn params_section(mut self, section: impl Into<String>) -> Model {
        self.params_section = Some(section.into());
        self
    }

    /// The flags cargo gives rustc for the target, for a tool that builds outside a build script
    /// (`cargo mlf build`'s check): the C is then compiled as a build script would compile it,
    /// where cargo passes them in `CARGO_ENCODED_RUSTFLAGS` and the `cc` crate turns some of
    /// them into C flags (`-C target-cpu`, `-C target-feature`, …). A build script needs not
    /// call this.
    pub fn rustflags(mut self, flags: Vec<String>) -> Model {
        self.rustflags = Some(flags);
        self
    }

    /// The most static memory the generated module may allocate (arena and parameter RAM), in
    /// bytes; a model that needs more is refused before code is generated. Default:
    /// [`DEFAULT_MAX_STATIC_BYTES`](crate::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES)
    /// (256 MiB). `max_static` in the model's `[package.metadata.mlf]` entry does the same.
    pub fn max_static_bytes(mut self, bytes: u64) -> Model {
        self.max_static = bytes;
        self
    }

    /// Adjusts the `cc::Build` that compiles the model's C (flags, compiler, defines). Headers
    /// the C includes may then come from include paths set here, so mlf no longer refuses a
    /// header it cannot find before the compiler runs.
    pub fn configure_cc(mut self, f: impl Fn(&mut cc::Build) + 'static) -> Model {
        self.configure = Some(Box::new(f));
        self.libs.compiler_configured = true;
        self
    }

    /// Adds a folder the model's C `#include`s are searched in: the headers of a vendor library
    /// that BYOC-generated code calls (CMSIS-NN's `Include/`, esp-dl's, …). Relative paths are
    /// resolved from `CARGO_MANIFEST_DIR`. Without it, such a model is refused before anything
    /// is compiled, naming the header and the library it belongs to.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Model {
        self.libs.include_dirs.push(dir.into());
        self
    }

    /// Adds a C file (or a folder: every `.c` file under it) compiled for the target with the
    /// model, in a library of its own: a vendor library's sources.
    pub fn c_source(mut self, path: impl Into<PathBuf>) -> Model {
        self.libs.sources.push(path.into());
        self
    }

    /// Links a prebuilt static library (`lib<name>.a`, built for the target) with the model: a
    /// vendor library shipped as a binary.
    pub fn link_library(mut self, path: impl Into<PathBuf>) -> Model {
        self.libs.libraries.push(path.into());
        self
    }

    /// Like [`Model::compile`] with every input given explicitly (for tools and tests):
    /// `cargo_metadata` controls whether `cargo:` link directives are printed.
    pub fn build_into(
        &self,
        path: &Path,
        out_dir: &Path,
        pkg: &str,
        target: &str,
        host: &str,
        cargo_metadata: bool,
    ) -> Result<Built> {
        let canonical = path.canonicalize().map_err(|e| Error::from(e).in_file(path))?;
        let desc = self.read_planned(&canonical)?;
        let sections = self.check_before_compile(&desc, &canonical, target, host)?;
        let layout = Layout::new(out_dir, pkg, &canonical, self.module.as_deref(), self.params);
        let module = self.name.clone().unwrap_or_else(|| desc.default_module_name(&canonical));
        let prefix = format!("mlf_{:08x}_", fnv1a(FNV_OFFSET, layout.key().as_bytes()) as u32);
        let job = CompileJob {
            desc: &desc,
            dir: layout.work_dir(),
            prefix: prefix.clone(),
            lib_name: format!("mlf_{}", layout.key().replace('-', "_")),
            target: target.to_string(),
            host: host.to_string(),
            cargo_metadata,
            fp_contract: self.fp_contract,
            rustflags: self.rustflags.as_deref(),
            configure: self.configure.as_deref(),
            libs: &self.libs,
            object_sections: Default::default(),
            params_asm: None,
            inline_workspace: None,
        };
        // External parameters: the split, and the model whose C no longer holds them when they
        // were in it (a constant pool, constant arrays, linked parameters): the C compiled and
        // the model planned are then that one.
        let (rewritten, split) = self.split_params(&desc, &job).in_file(&canonical)?;
        let code_desc = rewritten.as_ref().unwrap_or(&desc);
        // Profiling: operators that run inside the model's C (an AOT main's kernel calls) call
        // the module's hook; the C compiled and the module generated are then that model's.
        let hook = format!("{prefix}{}", backend::aot_profile::HOOK_SYMBOL);
        let profiled = match self.profile {
            Some(true) => backend::of(code_desc).instrument_for_profile(&hook).in_file(&canonical)?,
            _ => None,
        };
        let (code_desc, profiled_calls) = match &profiled {
            Some((d, calls)) => (d, Some(calls.as_slice())),
            None => (code_desc, None),
        };
        let inline_workspace = self.inline_workspace(code_desc);
        let (param_files, params_asm) =
            write_embedded_params(code_desc, &layout, &prefix, (split.is_none(), sections.params))?;
        let params = match (self.params, &split) {
            (Placement::Resident, Some(split)) => ParamCode::Resident(split),
            (Placement::Streamed, Some(split)) => ParamCode::Streamed(split),
            (Placement::Lazy, Some(split)) => ParamCode::Lazy(split),
            _ => ParamCode::Embedded(&param_files),
        };
        // The C first (the module states its frames' stack); LLVM objects' taken sections retargeted.
        let object_sections = params.split().map(|s| object_offsets(s, code_desc.plan_align())).unwrap_or_default();
        let compile_job = CompileJob { desc: code_desc, object_sections, params_asm, inline_workspace, ..job.clone() };
        let library = compile::compile(&compile_job).in_file(&canonical)?;
        let frames = compile::stack_frames(&job)?;
        let file_name = canonical.file_name().unwrap_or_default().to_string_lossy();
        // Bounded before anything is generated: the plan's figures against the limit.
        let planned = backend::of(code_desc).memory(&module, target, self.module.as_deref()).in_file(&canonical)?;
        let (arena, param_ram) = (planned.ram.arena, planned.ram.params);
        crate::plan::limits::check_static(
            arena.saturating_add(param_ram),
            &format!("arena {arena}, parameter RAM {param_ram}"),
            self.max_static,
        )
        .in_file(&canonical)?;
        let generated = backend::of(code_desc)
            .generate(&Generate {
                symbol_prefix: &prefix,
                params,
                module_name: &module,
                file_name: &file_name,
                model_file: None,
                target,
                mlf_module: self.module.as_deref(),
                frames: Some(&frames),
                shared_arena: self.shared_arena.as_deref(),
                sections,
                profiled_calls,
                inline_workspace,
            })
            .in_file(&canonical)?;
        let mut header = header(&desc, &file_name, (self.module.as_deref(), self.shared_arena.as_deref()), self.params);
        header.extend(super::layout::section_lines(sections.arena, sections.params));
        write_module(&layout, (&generated.tokens, &generated.summary), &header, &module, &canonical, cargo_metadata)?;
        let embedded: u64 =
            code_desc.params.iter().zip(&param_files).filter(|(_, f)| f.is_some()).map(|(p, _)| p.bytes()).sum();
        Ok(self.built(canonical, layout, module, generated, (embedded, split.as_ref()), library))
    }

    /// The workspace served inline in the model's C, when all the code that may ask for it is
    /// that C (the user's own C and libraries call the runtime's functions).
    fn inline_workspace(&self, code_desc: &crate::model::ModelDesc) -> Option<crate::plan::aot::InlineWorkspace> {
        let own_code_only = self.libs.sources.is_empty() && self.libs.libraries.is_empty();
        backend::of(code_desc).inline_workspace().filter(|_| own_code_only)
    }

    /// The model at `canonical`, as planned (without in-place operators when switched off).
    fn read_planned(&self, canonical: &Path) -> Result<ModelDesc> {
        let mut desc = crate::read::open(canonical, &ReadOptions { module: self.module.clone() })?;
        if !self.in_place {
            desc.without_in_place();
        }
        Ok(desc)
    }

    /// What is checked before the compiler ever runs on the model's C: that it has a build step,
    /// its link sections, the files it may make the compiler read, the runtime's names it may not
    /// define, then whether it can run on the target. Returns the sections.
    fn check_before_compile(
        &self,
        desc: &ModelDesc,
        canonical: &Path,
        target: &str,
        host: &str,
    ) -> Result<Sections<'_>> {
        backend::of(desc).check_build_step()?;
        let sections = Sections { arena: self.arena_section.as_deref(), params: self.params_section.as_deref() };
        sections.check(self.shared_arena.as_deref()).in_file(canonical)?;
        super::include_policy::check(desc).in_file(canonical)?;
        compile::check_runtime_symbols(desc).in_file(canonical)?;
        runnable::check_runnable(desc, target, host, &self.libs).in_file(canonical)?;
        Ok(sections)
    }

    /// What a build made, with the memory figures known before the link.
    fn built(
        &self,
        canonical: PathBuf,
        layout: Layout,
        module: String,
        generated: Generated,
        (embedded, split): (u64, Option<&Split>),
        library: PathBuf,
    ) -> Built {
        let external_bytes: u64 = split.map_or(0, |s| s.files.iter().map(|f| f.bytes()).sum());
        let kept = split.map_or(0, Split::kept_bytes);
        let mut unmeasured = generated.report;
        unmeasured.flash.params = embedded;
        unmeasured.ram.params = generated.param_ram_bytes;
        unmeasured.external_param_bytes = external_bytes;
        unmeasured.file = canonical.clone();
        unmeasured.shared_arena = self.shared_arena.clone();
        unmeasured.arena_section = self.arena_section.clone();
        unmeasured.params_section = self.params_section.clone();
        Built {
            model: canonical,
            rust_file: layout.rust_file(),
            module,
            arena_bytes: generated.arena_bytes,
            embedded_param_bytes: embedded,
            external_param_bytes: external_bytes,
            param_ram_bytes: generated.param_ram_bytes,
            param_bytes_kept_in_code: kept,
            library: Some(library),
            unmeasured,
            layout,
        }
    }

    /// With external parameters, their files (written to the split folder when one was asked
    /// for) and, when taking them out rewrote the C, the model the module is generated from.
    fn split_params(&self, desc: &ModelDesc, job: &CompileJob<'_>) -> Result<(Option<ModelDesc>, Option<Split>)> {
        if !self.params.is_external() {
            return Ok((None, None));
        }
        let (rewritten, mut split) = backend::of(desc).split_params(job)?;
        split.binding.digest = crate::plan::split::model_digest(desc, &split.files);
        split.binding.key = self.pack_key.as_deref().map(read_public_key).transpose()?;
        if let Some(d) = &self.split_dir {
            write_folder(d, desc, &split)?;
        }
        Ok((rewritten, Some(split)))
    }
}

/// The Ed25519 public key in the PEM file `path`.
fn read_public_key(path: &Path) -> Result<[u8; 32]> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::from(e).in_file(path).at("pack_key"))?;
    mlf_pack::sign::public_from_pem(&text).ok_or_else(|| {
        Error::invalid(
            "is not an Ed25519 public key in PEM (-----BEGIN PUBLIC KEY-----); `cargo mlf keygen` writes one",
        )
        .in_file(path)
    })
}

/// Writes the generated module and its side file (which `include_model!` finds), and, in a
/// build script, tells `include_model!` that this run built the model (and links its C).
fn write_module(
    layout: &Layout,
    (tokens, summary): (&proc_macro2::TokenStream, &str),
    header: &[String],
    module: &str,
    canonical: &Path,
    cargo_metadata: bool,
) -> Result<()> {
    write_if_changed(&layout.rust_file(), render::text(tokens, header)?.as_bytes())?;
    let (side_file, side) = layout.side_file_for(module, &Stamp::of(canonical)?, summary);
    write_if_changed(&side_file, &side)?;
    if cargo_metadata {
        println!("cargo::rustc-env={}=1", layout.built_env());
    }
    Ok(())
}

/// The comment lines at the top of a generated module.
/// `(mlf_module, shared_arena)`: the MLF module read, the shared arena built for.
fn header(
    desc: &ModelDesc,
    file_name: &str,
    (mlf_module, arena): (Option<&str>, Option<&str>),
    params: Placement,
) -> Vec<String> {
    let module = mlf_module.map(|m| format!(", MLF module `{m}`")).unwrap_or_default();
    let mut lines = vec![
        format!("@generated by mlf-build from {file_name} (model `{}`{module}, parameters {params}).", desc.name),
        "Do not edit: the build script writes it again whenever the model or the build step changes.".into(),
    ];
    lines.extend(arena.map(super::layout::shared_arena_line));
    lines
}

/// Writes every parameter the C does not hold into the model's folder, and the assembly that
/// embeds them from there (`.incbin`, compiled with the model's C: the bytes never pass through
/// rustc); returns, for each parameter, the symbol the assembly defines it under, or `None`
/// when the C holds it, and the assembly file (`None` when nothing is embedded). Writes nothing
/// unless `embed` (the parameters are embedded, not external); `section`: the link section the
/// assembly puts them in, if any.
fn write_embedded_params(
    desc: &ModelDesc,
    layout: &Layout,
    prefix: &str,
    (embed, section): (bool, Option<&str>),
) -> Result<(Vec<Option<String>>, Option<std::path::PathBuf>)> {
    if !embed {
        return Ok((Vec::new(), None));
    }
    let mut symbols = Vec::new();
    let mut embedded = Vec::new();
    for (k, p) in desc.params.iter().enumerate() {
        if p.linked.is_some() {
            symbols.push(None);
            continue;
        }
        let (file, _) = layout.param_file(&names::sanitize(&p.name));
        write_if_changed(&file, &p.data)?;
        let symbol = format!("{prefix}param{k}_{}", names::sanitize(&p.name));
        embedded.push((symbol.clone(), file, p.bytes()));
        symbols.push(Some(symbol));
    }
    if embedded.is_empty() {
        return Ok((symbols, None));
    }
    let asm = layout.work_dir().join("src").join(format!("{}.S", super::embed::PARAMS_ASM_STEM));
    write_if_changed(&asm, super::embed::assembly(&embedded, section)?.as_bytes())?;
    Ok((symbols, Some(asm)))
}

impl Toolchain for CompileJob<'_> {
    fn static_bytes(&self, member: &str, text: &str, symbols: &[&str]) -> Result<Vec<Vec<u8>>> {
        compile::extract_static_bytes(self, member, text, symbols)
    }
}
