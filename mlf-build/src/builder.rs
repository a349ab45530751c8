//! The `build.rs` API: open a model, choose parameter placement, compile its C for `$TARGET`,
//! and write the generated Rust module and aligned parameter files into `OUT_DIR`, where
//! `include_model!` finds them.
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     mlf_build::Model::open("models/digits.tar")
//!         .params(mlf_build::Params::Embedded)
//!         .compile()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::codegen;
use crate::compile::{self, CompileJob, write_if_changed};
use crate::error::{Context, Error, Result};
use crate::external::{self, Placement};
use crate::mlf::MlfOptions;
use crate::model::{Executor, FNV_OFFSET, ModelDesc};
use crate::plan;
use crate::report::{MemoryReport, PlanRef, measure_library};

/// Where parameters live at run time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Params {
    /// In the program image (flash), aligned, used in place: no byte is copied to RAM.
    #[default]
    Embedded,
    /// Outside the program image: every parameter in its own file named by a content-derived
    /// identifier, read at run time through a `mlf_runtime::params::ParamSource`. The generated
    /// code holds only identifiers, sizes and hashes.
    External {
        /// Resident (`Model::load` once) or streamed (`run(inputs, source)` per operator).
        placement: Placement,
        /// Where to write the parameter files and `configure.json` (`cargo mlf split` does this
        /// for you); `None` writes nothing.
        split_dir: Option<PathBuf>,
    },
}

impl Params {
    /// External parameters, loaded once into a static region.
    pub fn resident() -> Params {
        Params::External { placement: Placement::Resident, split_dir: None }
    }

    /// External parameters, streamed operator by operator through a staging buffer.
    pub fn streamed() -> Params {
        Params::External { placement: Placement::Streamed, split_dir: None }
    }
}

/// A model to build, configured by chained calls and built by [`Model::compile`].
pub struct Model {
    path: PathBuf,
    module: Option<String>,
    name: Option<String>,
    params: Params,
    fp_contract: bool,
    configure: Option<ConfigureCc>,
}

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
    /// The C library compiled for the model, if any.
    pub library: Option<PathBuf>,
    /// The memory report of what was built, before the library is measured ([`Built::report`]).
    #[serde(skip)]
    unmeasured: MemoryReport,
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
}

/// The sidecar `include_model!` reads next to a generated module.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Sidecar {
    /// Default module name.
    pub module: String,
    /// Fingerprint of the model file when the module was generated.
    pub fingerprint: String,
    /// One-line description for the module's documentation.
    pub summary: String,
}

impl Model {
    /// A model at `path` (relative paths are resolved from `CARGO_MANIFEST_DIR`).
    pub fn open(path: impl AsRef<Path>) -> Model {
        Model {
            path: path.as_ref().to_path_buf(),
            module: None,
            name: None,
            params: Params::Embedded,
            fp_contract: false,
            configure: None,
        }
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

    /// Chooses where the parameters live.
    pub fn params(mut self, params: Params) -> Model {
        self.params = params;
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

    /// Adjusts the `cc::Build` that compiles the model's C (flags, compiler, defines).
    pub fn configure_cc(mut self, f: impl Fn(&mut cc::Build) + 'static) -> Model {
        self.configure = Some(Box::new(f));
        self
    }

    /// Builds the model inside a build script: reads it, plans its memory, compiles its C for
    /// `$TARGET`, and writes the Rust module and parameter files into `$OUT_DIR/mlf/`.
    ///
    /// When the crate's `Cargo.toml` has a `[package.metadata.mlf]` table (see
    /// [`crate::manifest`]) that lists this model, its budgets are checked here: a model over
    /// its `ram`/`flash` budget, or the crate's models together over the crate's, fail the build
    /// with an error naming the model, the need and the budget.
    pub fn compile(self) -> Result<Built> {
        let env = |k: &str| {
            std::env::var(k)
                .map_err(|_| Error::invalid(format!("${k} is not set: Model::compile() runs inside a build script")))
        };
        let out_dir = PathBuf::from(env("OUT_DIR")?);
        let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let pkg = env("CARGO_PKG_NAME")?;
        let target = env("TARGET")?;
        let host = env("HOST").unwrap_or_else(|_| target.clone());
        let path = if self.path.is_absolute() { self.path.clone() } else { manifest_dir.join(&self.path) };
        println!("cargo::rerun-if-changed={}", path.display());
        let built = self.build_into(&path, &out_dir, &pkg, &target, &host, true)?;
        // Budgets from `[package.metadata.mlf]` in the crate's Cargo.toml (see `manifest`).
        crate::budget::enforce_in_build_script(&manifest_dir, &out_dir, &pkg, &target, self.module.as_deref(), &built)?;
        Ok(built)
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
        let desc = crate::open_with(&canonical, &MlfOptions { module: self.module.clone() })?;
        let placement = match &self.params {
            Params::Embedded => None,
            Params::External { placement, .. } => Some(*placement),
        };
        let key = placement_key(&model_key(pkg, &canonical, self.module.as_deref()), placement);
        let dir = out_dir.join("mlf").join(&key);
        let module = self.name.clone().unwrap_or_else(|| default_module_name(&desc, &canonical));
        let fingerprint = fingerprint(&canonical)?;
        let prefix = format!("mlf_{:08x}_", crate::model::fnv1a(FNV_OFFSET, key.as_bytes()) as u32);
        let base_job = CompileJob {
            desc: &desc,
            dir: dir.clone(),
            prefix: prefix.clone(),
            lib_name: format!("mlf_{}", key.replace('-', "_")),
            target: target.to_string(),
            host: host.to_string(),
            cargo_metadata,
            fp_contract: self.fp_contract,
            configure: self.configure.as_deref(),
        };
        // External parameters: the split, and for AOT the model whose C no longer holds its
        // constant pool (the C compiled and the model planned are then that one).
        let mut rewritten = None;
        let external = match &self.params {
            Params::Embedded => None,
            Params::External { placement, split_dir } => {
                let split = match &desc.executor {
                    Executor::Aot(_) => {
                        let (d2, split) = external::take_out_constant_pool(&desc, &base_job).in_file(&canonical)?;
                        rewritten = Some(d2);
                        split
                    }
                    Executor::Graph(_) => external::graph_split(&desc).in_file(&canonical)?,
                    Executor::Kmodel(_) => return Err(kmodel_needs_no_build(&canonical)),
                };
                if let Some(d) = split_dir {
                    external::write_folder(d, &desc, &split)?;
                }
                Some((*placement, split))
            }
        };
        let code_desc = rewritten.as_ref().unwrap_or(&desc);
        let external_bytes: u64 = external.as_ref().map_or(0, |(_, s)| s.files.iter().map(|f| f.bytes()).sum());
        let mut param_ram = 0;
        let mut embedded = 0;
        let align = code_desc.plan_align();
        let file_name = canonical.file_name().unwrap_or_default().to_string_lossy();
        let report =
            |plan: PlanRef<'_>| MemoryReport::from_plan(code_desc, plan, &module, target, self.module.as_deref());
        let (tokens, safety, arena_bytes, summary, mut unmeasured) = match &code_desc.executor {
            Executor::Graph(_) => {
                let plan = plan::graph::plan(code_desc, align).in_file(&canonical)?;
                let head = format!("TVM graph executor model `{}` from {file_name}", desc.name);
                let (params, summary) = match external {
                    Some((placement, split)) => {
                        param_ram = plan::params::graph_region(&plan, &split, placement).1;
                        let summary = format!(
                            "{head} with external parameters ({placement:?}): {} bytes of arena + {param_ram} bytes for parameters; {external_bytes} bytes of parameters read through a ParamSource.",
                            plan.arena_bytes,
                        );
                        (codegen::graph::ParamCode::External { placement, split }, summary)
                    }
                    None => {
                        let mut files = Vec::new();
                        for p in &desc.params {
                            if p.linked.is_some() {
                                files.push(None);
                                continue;
                            }
                            let f = dir.join("params").join(format!("{}.bin", crate::names::sanitize(&p.name)));
                            write_if_changed(&f, &p.data)?;
                            embedded += p.bytes();
                            files.push(Some(f));
                        }
                        let summary = format!(
                            "{head}: {} bytes of static RAM ({} layout; TVM's plan: {} bytes), {embedded} bytes of parameters in flash.",
                            plan.arena_bytes,
                            plan.layout,
                            plan.tvm.storage_bytes + plan.tvm.workspace_bytes,
                        );
                        (codegen::graph::ParamCode::Embedded(files), summary)
                    }
                };
                let cg = codegen::graph::GraphCodegen { symbol_prefix: prefix.clone(), params };
                let tokens = codegen::graph::module_tokens(code_desc, &plan, &cg).in_file(&canonical)?;
                (tokens, codegen::graph::SAFETY, plan.arena_bytes, summary, report(PlanRef::Graph(&plan)))
            }
            Executor::Aot(a) => {
                let plan = plan::aot::plan(code_desc, align).in_file(&canonical)?;
                let head = format!("TVM AOT model `{}` from {file_name}", desc.name);
                let ext = external.as_ref().map(|(placement, split)| (*placement, split));
                let tokens = codegen::aot::module_tokens(code_desc, &plan, &prefix, ext).in_file(&canonical)?;
                let summary = match ext {
                    Some((placement, split)) => {
                        param_ram = plan::params::sequential(split.files.iter().map(|f| f.bytes()), align).1;
                        format!(
                            "{head} with its constant pool external ({placement:?}): {} bytes of arena (workspace pool included) + {param_ram} bytes for the pool.",
                            plan.arena_bytes,
                        )
                    }
                    None => format!(
                        "{head} ({}): {} bytes of static RAM ({} of workspace from {}){}, {} bytes of constants compiled into the C.",
                        a.style,
                        plan.arena_bytes,
                        plan.workspace_bytes,
                        a.workspace_source,
                        a.usmp
                            .as_ref()
                            .map(|u| format!(", plus the C's own USMP pool of {} bytes", u.workspace_bytes))
                            .unwrap_or_default(),
                        desc.code.constants.iter().map(|c| c.bytes).sum::<u64>()
                    ),
                };
                (tokens, codegen::aot::SAFETY, plan.arena_bytes, summary, report(PlanRef::Aot(&plan)))
            }
            Executor::Kmodel(_) => return Err(kmodel_needs_no_build(&canonical)),
        };
        let text = codegen::pretty(&tokens, safety)?;
        let header = format!(
            "// Generated by mlf-build from {} (model `{}`). Do not edit: it is rewritten by build.rs.\n\n",
            canonical.display(),
            desc.name
        );
        let rust_file = out_dir.join("mlf").join(format!("{key}.rs"));
        write_if_changed(&rust_file, format!("{header}{text}").as_bytes())?;
        let sidecar = Sidecar { module: module.clone(), fingerprint, summary };
        write_if_changed(
            &out_dir.join("mlf").join(format!("{key}.json")),
            serde_json::to_string_pretty(&sidecar).expect("json").as_bytes(),
        )?;
        let library = Some(compile::compile(&CompileJob { desc: code_desc, ..base_job.clone() }).in_file(&canonical)?);
        unmeasured.flash.params = embedded;
        unmeasured.ram.params = param_ram;
        unmeasured.external_param_bytes = external_bytes;
        unmeasured.file = canonical.clone();
        Ok(Built {
            model: canonical,
            rust_file,
            module,
            arena_bytes,
            embedded_param_bytes: embedded,
            external_param_bytes: external_bytes,
            param_ram_bytes: param_ram,
            library,
            unmeasured,
        })
    }
}

/// The refusal of a kmodel by the build step.
fn kmodel_needs_no_build(path: &Path) -> Error {
    Error::unsupported(
        "kmodels need no build step: include_model!(\"….kmodel\") reads them directly; remove this Model::compile() call",
    )
    .in_file(path)
}

/// The name under which a model's generated files live in `OUT_DIR/mlf/`: the file stem (and
/// module) and a hash of the package name, the model's canonical path and the module name.
/// `include_model!` computes the same.
pub fn model_key(pkg: &str, canonical: &Path, module: Option<&str>) -> String {
    let stem = canonical.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let mut h = crate::model::fnv1a(FNV_OFFSET, pkg.as_bytes());
    h = crate::model::fnv1a(h, canonical.to_string_lossy().as_bytes());
    let mut name = crate::names::sanitize(stem);
    if let Some(m) = module {
        h = crate::model::fnv1a(h, m.as_bytes());
        name = format!("{name}-{}", crate::names::sanitize(m));
    }
    format!("{name}-{h:016x}")
}

/// The name of the generated files of a model (named `base` by [`model_key`]) built with
/// external parameters in `placement` (`None`: embedded): `base-resident`, `base-streamed`.
pub fn placement_key(base: &str, placement: Option<Placement>) -> String {
    match placement {
        None => base.to_string(),
        Some(p) => format!("{base}-{}", p.name()),
    }
}

/// The module name used when `include_model!` is not given one: the model name, or the file
/// stem when the model is called `default` (TVM's default).
pub fn default_module_name(desc: &ModelDesc, path: &Path) -> String {
    let base = if desc.name.is_empty() || desc.name == "default" {
        path.file_stem().and_then(|s| s.to_str()).unwrap_or("model").to_string()
    } else {
        desc.name.clone()
    };
    crate::names::module_ident(&base)
}

/// A fingerprint of a model file or directory's bytes (to detect stale generated code).
pub fn fingerprint(path: &Path) -> Result<String> {
    let mut h = FNV_OFFSET;
    if path.is_dir() {
        let archive = crate::archive::Archive::open(path)?;
        for name in archive.names() {
            h = crate::model::fnv1a(h, name.as_bytes());
            h = crate::model::fnv1a(h, archive.get(name).map(|b| b.as_slice()).unwrap_or_default());
        }
    } else {
        let data = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
        h = crate::model::fnv1a(h, &data);
    }
    Ok(format!("{h:016x}"))
}
