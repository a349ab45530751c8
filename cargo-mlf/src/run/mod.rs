//! `cargo mlf run MODEL --input NAME=FILE… --output-dir DIR [--raw] [--target TRIPLE]`: runs a
//! model on this host, or on an emulated device, through exactly the path a user takes — a
//! generated crate whose build.rs builds the model with `mlf_build` and whose `main.rs` includes
//! it with `include_model!` — built with cargo. Inputs are `.npy` or raw little-endian files;
//! outputs are written as `output<i>.npy` (or `output<i>.bin` with `--raw`) in output order.
//!
//! On a device (`--target`, [`machine`]) the program is `no_std` firmware run by QEMU with
//! semihosting: it reads the same raw input files and writes the same raw output files in the
//! run's folder, and reports its instructions per inference and stack high-water ([`device`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mlf_build::__private::UserLibraries;
use mlf_build::__private::runnable;
use mlf_build::{Error, ModelDesc, Placement};

use crate::io_error::InFile;
use mlf_build::__private::npy;
use mlf_build::__private::output::OutputDir;

mod code;
mod device;
mod device_code;
mod machine;
mod runner;

use machine::Machine;
pub use runner::without_default_features;
use runner::{Runner, Spec, build_runner};

/// Arguments of `run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model: an MLF `.tar` or directory, or a kmodel.
    model: PathBuf,
    /// An input: `NAME=FILE` (raw name or Rust field name), or just `FILE` for a model with one
    /// input. `.npy` files are checked against the model's dtype; other files are raw
    /// little-endian data.
    #[arg(long = "input", short = 'i', value_name = "NAME=FILE")]
    inputs: Vec<String>,
    /// Where to write the outputs.
    #[arg(long, short = 'o', default_value = ".")]
    output_dir: PathBuf,
    /// Write raw little-endian `output<i>.bin` instead of `output<i>.npy`.
    #[arg(long)]
    raw: bool,
    /// Folder for the generated crate and its build cache (default: `$CARGO_TARGET_DIR/mlf-run`
    /// or `target/mlf-run`).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// The module to read from an MLF that holds several.
    #[arg(long)]
    module: Option<String>,
    /// Where the parameters live: `embedded` (in the program image), `resident` (loaded once
    /// from a split folder or packed archive into static RAM) or `streamed` (read operator by
    /// operator into a staging buffer).
    #[arg(long, value_enum, default_value_t = mlf_build::Placement::Embedded)]
    params: mlf_build::Placement,
    /// With `--params resident|streamed`: the split folder or packed archive to read (default: a
    /// fresh split made by the build step).
    #[arg(long, value_name = "DIR|ARCHIVE")]
    from: Option<PathBuf>,
    /// Build the program with cargo's release profile (optimised Rust: parameter loading,
    /// input and output handling). The model's C is compiled with `-O2` either way.
    #[arg(long)]
    release: bool,
    /// A folder the model's C `#include`s are searched in: the headers of a vendor library that
    /// BYOC-generated code calls (CMSIS-NN, esp-dl, …). Repeatable.
    #[arg(long = "include-dir", value_name = "DIR")]
    include_dirs: Vec<PathBuf>,
    /// A C file (or a folder of them) compiled with the model: a vendor library's sources.
    /// Repeatable.
    #[arg(long = "c-source", value_name = "FILE|DIR")]
    c_sources: Vec<PathBuf>,
    /// A prebuilt static library (`lib<name>.a`) linked with the model. Repeatable.
    #[arg(long = "library", value_name = "FILE")]
    libraries: Vec<PathBuf>,
    /// Run on an emulated device instead of this computer: thumbv7em-none-eabihf,
    /// thumbv7em-none-eabi, thumbv7m-none-eabi, thumbv6m-none-eabi or riscv64gc-unknown-none-elf
    /// (QEMU; prints the instructions per inference and the stack high-water).
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    /// On a device: stop QEMU after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
}

/// The include folders, sources and libraries given, as absolute paths (an error names one that
/// does not exist).
fn user_libraries(args: &Args) -> Result<UserLibraries, Error> {
    let abs = |v: &[PathBuf]| v.iter().map(|p| p.canonicalize().in_file(p)).collect::<Result<Vec<_>, _>>();
    Ok(UserLibraries {
        include_dirs: abs(&args.include_dirs)?,
        sources: abs(&args.c_sources)?,
        libraries: abs(&args.libraries)?,
        compiler_configured: false,
    })
}

/// Runs `run`.
pub fn run(args: Args) -> Result<(), Error> {
    let model = args.model.canonicalize().in_file(&args.model)?;
    let desc = mlf_build::open_with(&model, &mlf_build::ReadOptions { module: args.module.clone() })?;
    let libs = user_libraries(&args)?;
    // Everything the build would refuse, refused now: one error, before anything is built.
    let host = crate::build::host_triple();
    // The device first: an unknown target is named as such, not as a missing C compiler.
    let device = device_for(args.target.as_deref(), args.params)?;
    let target = device.map_or(host.clone(), |m| m.target.to_string());
    runnable::check_runnable(&desc, &target, &host, &libs).map_err(|e| e.in_file(&model))?;
    let files = assign_inputs(&desc, &args.inputs)?;
    // Read and check the inputs before building anything.
    let inputs =
        desc.inputs.iter().zip(&files).map(|(t, file)| npy::read_input(file, t)).collect::<Result<Vec<_>, _>>()?;
    let work = std::path::absolute(args.work_dir.clone().unwrap_or_else(default_work_dir)).map_err(Error::from)?;
    let placement = args.params;
    if !placement.is_external() && args.from.is_some() {
        return Err(Error::invalid("--from needs --params resident or --params streamed"));
    }
    let spec = Spec {
        desc: &desc,
        model: &model,
        module: args.module.as_deref(),
        libs: &libs,
        placement,
        release: args.release,
        device,
    };
    let runner = build_runner(&spec, &work)?;

    // The inputs as raw little-endian files the program reads, in a folder of this run's own.
    std::fs::create_dir_all(&work).in_file(&work)?;
    let staging = tempfile::Builder::new().prefix("io-").tempdir_in(&work).in_file(&work)?;
    let input_dir = staging.path().join("inputs");
    std::fs::create_dir_all(&input_dir).in_file(&input_dir)?;
    let mut raw_inputs = Vec::new();
    for (i, bytes) in inputs.into_iter().enumerate() {
        let p = input_dir.join(format!("input{i}.bin"));
        std::fs::write(&p, bytes).in_file(&p)?;
        raw_inputs.push(p);
    }
    let out_raw = staging.path().join("outputs");
    std::fs::create_dir_all(&out_raw).in_file(&out_raw)?;
    let from = match (&args.from, placement.is_external()) {
        (Some(f), _) => Some(f.canonicalize().in_file(f)?),
        (None, true) => Some(runner.split_dir.clone().expect("external builds write a split")),
        (None, false) => None,
    };
    match device {
        Some(machine) => run_device(machine, &runner, staging.path(), from.as_deref(), args.timeout)?,
        None => run_host(&runner, &out_raw, &raw_inputs, from.as_deref(), &model)?,
    }
    write_outputs(&desc, &out_raw, &args.output_dir, args.raw)
}

/// The emulated device for `--target` (none for this computer's own triple), with its tools
/// checked.
fn device_for(target: Option<&str>, placement: Placement) -> Result<Option<&'static Machine>, Error> {
    let Some(target) = target.filter(|t| *t != crate::build::host_triple()) else { return Ok(None) };
    let machine = Machine::for_target(target)?;
    if placement.is_external() && machine.params.is_none() {
        return Err(Error::invalid(format!(
            "{} ({}) has no room for a parameter partition: use --params embedded",
            machine.target, machine.about
        )));
    }
    // (Checks of the model against the target, such as a C compiler for it, are the build
    // step's: a failing build names what is missing.)
    machine.tools()?;
    Ok(Some(machine))
}

/// Runs the host program: `<out dir> <input file>… [<params>]`.
fn run_host(
    runner: &Runner,
    out_raw: &Path,
    inputs: &[PathBuf],
    from: Option<&Path>,
    model: &Path,
) -> Result<(), Error> {
    let exe = &runner.exe;
    eprintln!("running {}", exe.display());
    let mut cmd = Command::new(exe);
    cmd.arg(out_raw).args(inputs);
    if let Some(from) = from {
        eprintln!("parameters from {}", from.display());
        cmd.arg(from);
    }
    let status = cmd.status().in_file(exe)?;
    if !status.success() {
        return Err(Error::invalid(format!("the model failed to run ({status})")).in_file(model));
    }
    Ok(())
}

/// Runs the device program under QEMU in `staging` and prints what it measured.
fn run_device(
    machine: &'static Machine,
    runner: &Runner,
    staging: &Path,
    from: Option<&Path>,
    timeout: u64,
) -> Result<(), Error> {
    let qemu = machine.tools()?;
    let image = match from {
        Some(from) => {
            eprintln!("parameters from {}", from.display());
            Some(device::params_image(machine, from, staging)?)
        }
        None => None,
    };
    let report = device::run(machine, &qemu, &runner.exe, staging, image.as_deref(), Duration::from_secs(timeout))?;
    device::print(machine, &report, &runner.exe);
    report.check_stack()
}

/// Writes the raw outputs the program left in `out_raw` to `dir`, as `.npy` or raw files, never
/// through a link already in the folder (`output0.npy → ~/.bashrc`): see `OutputDir`.
fn write_outputs(desc: &ModelDesc, out_raw: &Path, dir: &Path, raw: bool) -> Result<(), Error> {
    let out_dir = OutputDir::create(dir)?;
    for (i, t) in desc.outputs.iter().enumerate() {
        let file = out_raw.join(format!("output{i}.bin"));
        let bytes = std::fs::read(&file).in_file(&file)?;
        let name = format!("output{i}.{}", if raw { "bin" } else { "npy" });
        let data = if raw { bytes } else { npy::output_npy(t, &bytes).map_err(|e| e.in_file(&name))? };
        let dest = out_dir.write(&name, &data)?;
        eprintln!("output {i} ({}, {} {:?}) → {}", t.name, t.dtype, t.shape, dest.display());
    }
    Ok(())
}

fn default_work_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("mlf-run"),
        None => PathBuf::from("target").join("mlf-run"),
    }
}

/// Matches `--input` arguments to the model's inputs, in the model's order.
fn assign_inputs(desc: &ModelDesc, given: &[String]) -> Result<Vec<PathBuf>, Error> {
    let names = || desc.inputs.iter().map(input_name).collect::<Vec<_>>().join(", ");
    let mut files: Vec<Option<PathBuf>> = vec![None; desc.inputs.len()];
    for g in given {
        let (name, file) = match g.split_once('=') {
            Some((n, f)) => (Some(n), f),
            None => (None, g.as_str()),
        };
        let idx = match name {
            Some(n) => desc.inputs.iter().position(|t| t.name == n || t.ident == n).ok_or_else(|| {
                let hint = closest(desc, n).map(|c| format!("did you mean {c:?}? ")).unwrap_or_default();
                Error::invalid(format!("no input named {n:?}; {hint}the model's inputs are: {}", names()))
            })?,
            None if desc.inputs.len() == 1 => 0,
            None => {
                return Err(Error::invalid(format!(
                    "the model has {} inputs; name each: --input NAME=FILE ({})",
                    desc.inputs.len(),
                    names()
                )));
            }
        };
        if files[idx].replace(PathBuf::from(file)).is_some() {
            return Err(Error::invalid(format!("input {} given twice", desc.inputs[idx].name)));
        }
    }
    files
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            f.ok_or_else(|| {
                let t = &desc.inputs[i];
                Error::invalid(format!(
                    "missing input {} ({} {:?}): add --input {}=FILE (a .npy file or raw little-endian bytes)",
                    input_name(t),
                    t.dtype,
                    t.shape,
                    t.name
                ))
            })
        })
        .collect()
}

/// An input's name, with its Rust field name when that differs.
fn input_name(t: &mlf_build::TensorInfo) -> String {
    if t.ident == t.name { t.name.clone() } else { format!("{} (field {})", t.name, t.ident) }
}

/// The model's input name closest to `given` (a likely misspelling), if one is close.
fn closest(desc: &ModelDesc, given: &str) -> Option<String> {
    desc.inputs
        .iter()
        .flat_map(|t| [&t.name, &t.ident])
        .map(|n| (strsim::damerau_levenshtein(&n.to_lowercase(), &given.to_lowercase()), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.clone())
}
