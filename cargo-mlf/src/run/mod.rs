//! `cargo mlf run MODEL --input NAME=FILE… [--fill MODE] --output-dir DIR [--raw] [--print-top N]
//! [--target TRIPLE]`: runs a model on this host, or on an emulated device, through exactly the
//! path a user takes — a generated crate whose build.rs builds the model with `mlf_build` and
//! whose `main.rs` includes it with `include_model!` — built with cargo in a cache folder
//! ([`default_build_dir`]). Inputs are `.npy` or raw little-endian files, or filled
//! ([`inputs`]); outputs are written as `<output name>.npy` (or `.bin` with `--raw`,
//! [`outputs`]).
//!
//! On a device (`--target`, [`machine`]) the program is `no_std` firmware run by QEMU with
//! semihosting: it reads the same raw input files and writes the same raw output files in the
//! run's folder, and reports its instructions per inference and stack high-water ([`device`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mlf_build::__private::UserLibraries;
use mlf_build::__private::runnable;
use mlf_build::{Error, Placement};

use crate::io_error::InFile;

mod code;
mod device;
mod device_code;
mod inputs;
pub mod machine;
mod outputs;
mod profile;
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
    /// Fill the inputs not given with `--input`: `zeros`, `ones`, or `random` (seeded by
    /// `--seed`: integers over the dtype's whole range, floats in [0, 1)). Without it a missing
    /// input is an error.
    #[arg(long, value_enum, value_name = "MODE")]
    fill: Option<inputs::Fill>,
    /// The seed of `--fill random` (the same seed gives the same inputs).
    #[arg(long, value_name = "N", default_value_t = inputs::DEFAULT_SEED, requires = "fill")]
    seed: u64,
    /// Where to write the outputs: one `.npy` file per output, named after the output
    /// (`<name>.npy`; its Rust field name when the name is not a plain file name). Default: the
    /// current folder, except with `--print-top` alone, which writes no file.
    #[arg(long, short = 'o')]
    output_dir: Option<PathBuf>,
    /// Write raw little-endian `<name>.bin` files instead of `.npy`.
    #[arg(long)]
    raw: bool,
    /// Print each output's N largest values with their flat indices on stdout
    /// (`output `NAME`: top N: INDEX (VALUE), …`).
    #[arg(long, value_name = "N")]
    print_top: Option<usize>,
    /// Folder for the generated crate and its build cache (default: `$CARGO_TARGET_DIR/mlf-run`
    /// when set, else the user's cache folder: `$XDG_CACHE_HOME/mlf/run` or
    /// `~/.cache/mlf/run`; never the current folder).
    #[arg(long, value_name = "DIR", alias = "work-dir")]
    build_dir: Option<PathBuf>,
    /// The module to read from an MLF that holds several (without it such an archive is refused
    /// with the list of its modules).
    #[arg(long, value_name = "NAME")]
    module: Option<String>,
    /// Where the parameters live: `embedded` (in the program image), `resident` (loaded once
    /// from a split folder or packed archive into static RAM), `streamed` (read operator by
    /// operator into a staging buffer) or `lazy` (in the resident region, each read the first
    /// time an operator that uses it runs).
    #[arg(long, value_enum, default_value_t = mlf_build::Placement::Embedded)]
    params: mlf_build::Placement,
    /// With `--params resident|streamed|lazy`: the split folder or packed archive to read (default: a
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
    /// Profile the run per operator and print a table (docs/profiling.md): instructions on a
    /// device (`--target`), mean nanoseconds over 50 runs on this computer; each operator's
    /// share of the run, arena window and parameter bytes.
    #[arg(long)]
    profile: bool,
    /// With `--profile`: also write the profile as JSON to FILE.
    #[arg(long, value_name = "FILE", requires = "profile")]
    profile_json: Option<PathBuf>,
    /// With `--profile`: also draw it to FILE (SVG): one bar per operator beside the memory plan.
    #[arg(long, value_name = "FILE", requires = "profile")]
    profile_svg: Option<PathBuf>,
    /// On a device: stop QEMU after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
}

/// Where the output files go: `--output-dir`, else the current folder, else nowhere when the
/// outputs are only printed (`--print-top` alone).
fn output_dir(args: &Args) -> Option<PathBuf> {
    match (&args.output_dir, args.print_top) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(PathBuf::from(".")),
    }
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
    // Read and check the inputs before building anything.
    let inputs = inputs::input_bytes(&desc, &args.inputs, args.fill, args.seed).map_err(|e| e.in_file(&model))?;
    let work = match &args.build_dir {
        Some(dir) => dir.clone(),
        None => default_build_dir(|v| std::env::var_os(v))?,
    };
    let work = std::path::absolute(work).map_err(Error::from)?;
    let placement = args.params;
    if !placement.is_external() && args.from.is_some() {
        return Err(Error::invalid("--from needs --params resident, streamed or lazy"));
    }
    let spec = Spec {
        desc: &desc,
        model: &model,
        module: args.module.as_deref(),
        libs: &libs,
        placement,
        release: args.release,
        profile: args.profile,
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
    let profile_file = args.profile.then(|| staging.path().join("profile.txt"));
    let (report, unit, target, about, resolution) = match device {
        Some(machine) => {
            let report = run_device(machine, &runner, staging.path(), from.as_deref(), args.timeout)?;
            (report, "instructions", machine.target.to_string(), machine.about.to_string(), machine.resolution())
        }
        None => {
            run_host(&runner, &out_raw, (&raw_inputs, from.as_deref()), profile_file.as_deref(), &model)?;
            let text = match &profile_file {
                Some(f) => std::fs::read_to_string(f).in_file(f)?,
                None => String::new(),
            };
            (device::Report::parse(&text), "ns", host, "this computer".to_string(), 1)
        }
    };
    if args.profile {
        let memory = mlf_build::__private::operator_memory(&desc).unwrap_or_default();
        let p = profile::Profile { report: &report, unit, target, about, resolution, memory };
        profile::print(&p);
        if let Some(path) = &args.profile_json {
            profile::write_json(&p, path)?;
        }
        if let Some(path) = &args.profile_svg {
            profile::write_svg(&p, &desc, &desc.default_module_name(&model), path)?;
        }
    }
    outputs::write_outputs(&desc, &out_raw, output_dir(&args).as_deref(), args.raw, args.print_top)
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
/// With `profile`, the program also profiles more runs into that file.
fn run_host(
    runner: &Runner,
    out_raw: &Path,
    (inputs, from): (&[PathBuf], Option<&Path>),
    profile: Option<&Path>,
    model: &Path,
) -> Result<(), Error> {
    let exe = &runner.exe;
    eprintln!("running {}", exe.display());
    let mut cmd = Command::new(exe);
    if let Some(p) = profile {
        cmd.env("MLF_RUN_PROFILE", p);
    }
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
) -> Result<device::Report, Error> {
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
    report.check_stack()?;
    Ok(report)
}

/// Where `cargo mlf run` builds when `--build-dir` is not given, whatever the current folder:
/// `$CARGO_TARGET_DIR/mlf-run`, else the platform's cache folder (`$XDG_CACHE_HOME/mlf/run`,
/// `$HOME/.cache/mlf/run`; `~/Library/Caches/mlf/run` on macOS, `%LOCALAPPDATA%\mlf\run` on
/// Windows). `var` reads the environment.
fn default_build_dir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, Error> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(t) = set("CARGO_TARGET_DIR") {
        return Ok(t.join("mlf-run"));
    }
    let cache = if cfg!(windows) {
        set("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        set("HOME").map(|h| h.join("Library/Caches"))
    } else {
        set("XDG_CACHE_HOME").filter(|p| p.is_absolute()).or_else(|| set("HOME").map(|h| h.join(".cache")))
    };
    cache.map(|c| c.join("mlf").join("run")).ok_or_else(|| {
        Error::invalid(
            "no folder to build in: neither CARGO_TARGET_DIR nor HOME (or XDG_CACHE_HOME) is set; give --build-dir DIR",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_folder_does_not_depend_on_the_current_folder() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.into())
        };
        let dir = |pairs| default_build_dir(env(pairs)).map_err(|e| e.to_string());
        assert_eq!(dir(&[("CARGO_TARGET_DIR", "/t"), ("HOME", "/h")]), Ok(PathBuf::from("/t/mlf-run")));
        if cfg!(all(unix, not(target_os = "macos"))) {
            assert_eq!(dir(&[("HOME", "/h")]), Ok(PathBuf::from("/h/.cache/mlf/run")));
            assert_eq!(dir(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]), Ok(PathBuf::from("/x/mlf/run")));
            assert_eq!(dir(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")]), Ok(PathBuf::from("/h/.cache/mlf/run")));
            assert_eq!(dir(&[("CARGO_TARGET_DIR", ""), ("HOME", "/h")]), Ok(PathBuf::from("/h/.cache/mlf/run")));
        }
        assert!(dir(&[]).unwrap_err().contains("--build-dir DIR"));
    }
}
