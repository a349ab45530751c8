//! `cargo mlf new PATH [--name NAME] [--model MODEL] [--template host|firmware|k210]`: a new
//! crate in the folder `PATH` (named after its last component unless `--name` is given, as
//! `cargo new` does; names cargo refuses are refused first, see [`crate::crate_name`]; `.` or an
//! empty folder gets the crate in place, as `cargo init`) from `templates/host` (a program that
//! runs the model and prints its outputs), `templates/firmware` (Cortex-M4F firmware that `cargo
//! run` runs in QEMU) or `templates/k210` (a kmodel on a K210, RV64GC, run in QEMU the same
//! way), with the model copied into `models/`, listed in `[package.metadata.mlf]`, and built by
//! `build.rs`. The model's module is named after the crate (`-` becomes `_`). The mlf crates
//! come from a checkout or crates.io ([`source`]); a `.gitignore` and a git repository are
//! made as `cargo new` makes them ([`vcs`]).

use std::path::{Path, PathBuf};

use mlf_build::Error;

use crate::diag::{Diag, Level};
use crate::io_error::InFile;
use crate::template;

mod source;
mod vars;
mod vcs;
mod vectors;

use source::Source;

/// The digits model the repository carries (a TVM graph-executor MLF of an sklearn MLP), used
/// when no `--model` is given.
const DIGITS_TAR: &[u8] = include_bytes!("../../templates/models/digits.tar");

/// Which template.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A program for this computer that runs the model on input files and prints its outputs.
    Host,
    /// Cortex-M4F firmware (`thumbv7em-none-eabihf`): static model, no allocator, result
    /// printed through semihosting; `cargo run` runs it in QEMU.
    Firmware,
    /// A kmodel on a Kendryte K210 (`riscv64gc-unknown-none-elf`); `cargo run` runs it in QEMU.
    K210,
}

impl Kind {
    /// The template's name.
    fn name(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Firmware => "firmware",
            Kind::K210 => "k210",
        }
    }
}

/// Arguments of `new`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The folder to create; the crate is named after its last component unless `--name` is
    /// given (as with `cargo new`). `.` (or an empty folder) makes the crate in place, as
    /// `cargo init`.
    path: PathBuf,
    /// The crate's name (default: the folder's name). The model's module is named after the
    /// crate (`-` becomes `_`).
    #[arg(long)]
    name: Option<String>,
    /// The model: an MLF `.tar` or extracted folder, or a kmodel. It is copied into `models/`.
    /// Without it, the crate gets the digits example model (a TVM graph MLF, 50 KiB).
    #[arg(long)]
    model: Option<PathBuf>,
    /// The template.
    #[arg(long, value_enum, default_value = "host")]
    template: Kind,
    /// The MLF module to read from an archive that holds several (the generated Rust module is
    /// still named after the crate).
    #[arg(long)]
    module: Option<String>,
    /// Depend on the mlf crates of this checkout of mlf (`DIR/mlf-runtime`, `DIR/mlf-build`) by
    /// path. Without it, a cargo-mlf built from a checkout uses that checkout.
    #[arg(long, value_name = "DIR", conflicts_with = "published")]
    mlf_path: Option<PathBuf>,
    /// Depend on the published mlf crates of this cargo-mlf's version (crates.io), even when
    /// cargo-mlf was built from a checkout.
    #[arg(long)]
    published: bool,
    /// Reference vectors for the firmware and k210 templates: a folder with a `manifest.json`
    /// (as the fixtures' `vectors/`) whose case 0 the firmware runs and compares with its
    /// reference. Default: `vectors/` beside the model, when it is there (the bundled digits
    /// model has its own).
    #[arg(long, value_name = "DIR")]
    vectors: Option<PathBuf>,
    /// Version control: `git` (a repository unless the folder is inside one, and a
    /// `.gitignore`) or `none`.
    #[arg(long, value_enum, default_value = "git")]
    vcs: vcs::Vcs,
}

/// Runs `new`.
pub fn run(args: Args) -> Result<(), Error> {
    let dir = args.path.clone();
    let name = match &args.name {
        Some(n) => n.clone(),
        None => folder_name(&dir)?,
    };
    let source = Source::choose(args.mlf_path.as_deref(), args.published)?;
    let created = create(&args, &name, source.checkout())?;
    let vcs = vcs::init(&dir, args.vcs)?;
    eprintln!(
        "     Created {} crate `{}` in {} with model {} (module `{}`)",
        args.template.name(),
        name,
        dir.display(),
        created.model_path,
        created.module
    );
    eprintln!("note: {}", source.note());
    if let Some(done) = vcs {
        eprintln!("note: {done}");
    }
    if created.vectors {
        eprintln!("note: the firmware runs case 0 of the model's reference vectors (vectors/) and compares its output");
    }
    if source == Source::Published
        && let Some(said) = source::check_published(&dir)
    {
        Diag::new(format!("the mlf crates {} cannot be resolved: {said}", env!("CARGO_PKG_VERSION")))
            .help(source::unresolved_help())
            .emit(Level::Warning);
    }
    let cd = if is_current(&dir) { String::new() } else { format!("cd {} && ", dir.display()) };
    match args.template {
        Kind::Host => eprintln!("        Next: {cd}cargo mlf build && cargo run"),
        Kind::Firmware => eprintln!(
            "        Next: {cd}cargo run   (builds for thumbv7em-none-eabihf with arm-none-eabi-gcc, runs in QEMU through `cargo mlf qemu`)"
        ),
        Kind::K210 => eprintln!(
            "        Next: {cd}cargo run   (builds for riscv64gc-unknown-none-elf, runs in QEMU through `cargo mlf qemu`)"
        ),
    }
    Ok(())
}

/// Whether `dir` is the current folder.
fn is_current(dir: &Path) -> bool {
    let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
    here.is_some() && dir.canonicalize().ok() == here
}

/// The crate name a folder gives: its last component (of the resolved path, so that `.` names
/// the current folder).
fn folder_name(dir: &Path) -> Result<String, Error> {
    let abs = dir.canonicalize().or_else(|_| std::path::absolute(dir)).in_file(dir)?;
    let last = abs.components().rfind(|c| !matches!(c, std::path::Component::CurDir));
    match last {
        Some(std::path::Component::Normal(s)) => Ok(s.to_string_lossy().into_owned()),
        _ => Err(Error::invalid("this folder has no name to give the crate").in_file(dir).with_help("use --name NAME")),
    }
}

/// What [`create`] made.
pub struct Created {
    /// The model's path inside the crate (`models/<file>`).
    pub model_path: String,
    /// The module name.
    pub module: String,
    /// Whether the firmware runs a reference vector.
    pub vectors: bool,
}

/// Checks that the crate can be made in `dir`: a new or empty folder, or (as `cargo init`) the
/// current folder when it holds no `Cargo.toml` and none of the files the template writes.
fn check_folder(dir: &Path, template: &template::Template, model_path: &str) -> Result<(), Error> {
    if !dir.exists() || std::fs::read_dir(dir).in_file(dir)?.next().is_none() {
        return Ok(());
    }
    if !is_current(dir) {
        return Err(Error::invalid("the folder exists and is not empty").in_file(dir).with_help(
            "give another folder, or run `cargo mlf new .` inside it to add the crate to it (as `cargo init`)",
        ));
    }
    for rel in template.iter().map(|(rel, _)| *rel).chain([model_path]) {
        if dir.join(rel).exists() {
            return Err(Error::invalid(format!("{rel} exists already; cargo mlf new writes no file over another"))
                .in_file(dir)
                .with_help("move it away, or make the crate in another folder"));
        }
    }
    Ok(())
}

/// Creates the crate `name` in `args.path` from `args.template` with `args.model` (or the
/// bundled digits model), depending on the published mlf crates or on those of the checkout
/// `mlf_path`.
pub fn create(args: &Args, name: &str, mlf_path: Option<&Path>) -> Result<Created, Error> {
    let (model, kind, dir, module) =
        (args.model.as_deref(), args.template, args.path.as_path(), args.module.as_deref());
    crate::crate_name::check(name)?;
    let template = match kind {
        Kind::Host => &template::HOST[..],
        Kind::Firmware => &template::FIRMWARE[..],
        Kind::K210 => &template::K210[..],
    };
    // Read the model before writing anything: a model that cannot be built leaves no crate.
    let (file_name, source) = match model {
        Some(p) => {
            let canonical = p.canonicalize().in_file(p)?;
            let file_name = canonical
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .ok_or_else(|| Error::invalid("the model path has no file name").in_file(p))?;
            (file_name, Some(canonical))
        }
        None if kind == Kind::K210 => {
            return Err(Error::invalid(
                "the k210 template runs a kmodel: give one with --model PATH.kmodel (no kmodel is bundled)",
            ));
        }
        None => ("digits.tar".to_string(), None),
    };
    if file_name.chars().any(|c| c.is_control() || matches!(c, '"' | '\\' | '{' | '}')) {
        return Err(Error::invalid(format!(
            "{file_name:?}: rename the model file; its name goes into Cargo.toml and Rust strings"
        )));
    }
    let staging = tempfile::tempdir().map_err(Error::from)?;
    let staged = match &source {
        Some(p) => p.clone(),
        None => {
            let p = staging.path().join(&file_name);
            std::fs::write(&p, DIGITS_TAR).in_file(&p)?;
            p
        }
    };
    let desc = mlf_build::open_with(&staged, &mlf_build::ReadOptions { module: module.map(str::to_string) })?;
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")).in_file(&staged));
    }
    if kind == Kind::K210 && !matches!(desc.executor, mlf_build::Executor::Kmodel(_)) {
        return Err(Error::unsupported(
            "the k210 template runs kmodels; for a TVM model use --template firmware (Cortex-M), or add mlf-build and a RISC-V C compiler to a k210 crate (its README says how)",
        )
        .in_file(&staged));
    }
    // The module is named after the crate (`kws` for `cargo mlf new kws --model …/model.tar`),
    // not after the model file, which is often just `model`.
    let module_name = mlf_build::__private::names::module_ident(name);
    let model_path = format!("models/{file_name}");
    check_folder(dir, template, &model_path)?;
    let case = reference_case(args, &desc, source.as_deref())?;

    std::fs::create_dir_all(dir.join("models")).in_file(dir)?;
    copy_model(&staged, &dir.join(&model_path))?;
    let (runtime_dep, build_dep) = template::deps(kind == Kind::Host, mlf_path);
    let mut vars = vec![
        ("crate_name", name.to_string()),
        ("runtime_dep", runtime_dep),
        ("build_dep_minimal", crate::run::without_default_features(&build_dep)),
        ("build_dep", build_dep),
        ("model_path", model_path.clone()),
        ("module", module_name.clone()),
        ("module_line", module.map(|m| format!("module = {m:?}\n")).unwrap_or_default()),
        ("input_fields", desc.inputs.iter().map(|t| format!("{0}: &{0}", t.ident)).collect::<Vec<_>>().join(", ")),
    ];
    match kind {
        Kind::Host => vars.extend(vars::host_vars(&desc, &module_name)?),
        Kind::Firmware | Kind::K210 => vars.extend(vars::firmware_vars(&desc, &module_name, case.as_ref())?),
    }
    template::render_dir(template, dir, &vars)?;
    if let Some(c) = &case {
        c.write(dir)?;
    }
    Ok(Created { model_path, module: module_name, vectors: case.is_some() })
}

/// The reference vector the firmware templates run: case 0 of `--vectors DIR` (which must have
/// one that fits the model), of `vectors/` beside the model, or the bundled digits model's.
fn reference_case(
    args: &Args,
    desc: &mlf_build::ModelDesc,
    model: Option<&Path>,
) -> Result<Option<vectors::Case>, Error> {
    if args.template == Kind::Host {
        return Ok(None);
    }
    if let Some(dir) = &args.vectors {
        return vectors::Case::read(dir, desc)?.map(Some).ok_or_else(|| {
            Error::invalid("no case 0 in manifest.json whose files fit the model's inputs and first output")
                .in_file(dir)
                .with_help("give a folder of reference vectors as the fixtures lay them out (manifest.json, raw little-endian files)")
        });
    }
    match model {
        Some(m) => match m.parent() {
            Some(parent) => vectors::Case::read(&parent.join("vectors"), desc),
            None => Ok(None),
        },
        None => Ok(Some(vectors::Case::digits())),
    }
}

/// Copies a model file, or an extracted MLF folder with everything in it.
fn copy_model(from: &Path, to: &Path) -> Result<(), Error> {
    if from.is_dir() {
        std::fs::create_dir_all(to).in_file(to)?;
        for entry in std::fs::read_dir(from).in_file(from)? {
            let entry = entry.in_file(from)?;
            let ty = entry.file_type().in_file(entry.path())?;
            if ty.is_dir() || ty.is_file() {
                copy_model(&entry.path(), &to.join(entry.file_name()))?;
            }
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ()).in_file(from)
    }
}
