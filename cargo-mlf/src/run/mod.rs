//! `cargo mlf run MODEL --input NAME=FILE… --output-dir DIR [--raw]`: runs a model on this
//! host through exactly the path a user takes — a generated crate whose build.rs builds the
//! model with `mlf_build` and whose `main.rs` includes it with `include_model!` — built with
//! cargo. Inputs are `.npy` or raw little-endian files; outputs are written as `output<i>.npy`
//! (or `output<i>.bin` with `--raw`) in output order.

use std::path::PathBuf;
use std::process::Command;

use mlf_build::Error;
use mlf_build::ModelDesc;

use crate::io_error::InFile;
use mlf_build::__private::npy;
use mlf_build::__private::output::OutputDir;

mod code;
mod runner;

use runner::build_runner;
pub use runner::{deps, deps_no_std};

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
}

/// Runs `run`.
pub fn run(args: Args) -> Result<(), Error> {
    let model = args.model.canonicalize().in_file(&args.model)?;
    let desc = mlf_build::open_with(&model, &mlf_build::ReadOptions { module: args.module.clone() })?;
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")).in_file(&model));
    }
    let files = assign_inputs(&desc, &args.inputs)?;
    // Read and check the inputs before building anything.
    let inputs =
        desc.inputs.iter().zip(&files).map(|(t, file)| npy::read_input(file, t)).collect::<Result<Vec<_>, _>>()?;
    let work = std::path::absolute(args.work_dir.clone().unwrap_or_else(default_work_dir)).map_err(Error::from)?;
    let placement = args.params;
    if !placement.is_external() && args.from.is_some() {
        return Err(Error::invalid("--from needs --params resident or --params streamed"));
    }
    let runner = build_runner(&desc, &model, args.module.as_deref(), &work, placement, args.release)?;
    let exe = runner.exe;

    // Convert inputs to raw little-endian files the runner reads, in a folder of this run's own.
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
    eprintln!("running {}", exe.display());
    let mut cmd = Command::new(&exe);
    cmd.arg(&out_raw).args(&raw_inputs);
    if placement.is_external() {
        let from = match &args.from {
            Some(f) => f.canonicalize().in_file(f)?,
            None => runner.split_dir.clone().expect("external builds write a split"),
        };
        eprintln!("parameters from {}", from.display());
        cmd.arg(from);
    }
    let status = cmd.status().in_file(&exe)?;
    if !status.success() {
        return Err(Error::invalid(format!("the model failed to run ({status})")).in_file(&model));
    }
    // Never through a link already in the folder (`output0.npy → ~/.bashrc`): see OutputDir.
    let out_dir = OutputDir::create(&args.output_dir)?;
    for (i, t) in desc.outputs.iter().enumerate() {
        let raw = std::fs::read(out_raw.join(format!("output{i}.bin"))).in_file(&out_raw)?;
        let name = format!("output{i}.{}", if args.raw { "bin" } else { "npy" });
        let data = if args.raw { raw } else { npy::output_npy(t, &raw).map_err(|e| e.in_file(&name))? };
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
    let names = || desc.inputs.iter().map(|t| format!("{} ({})", t.name, t.ident)).collect::<Vec<_>>().join(", ");
    let mut files: Vec<Option<PathBuf>> = vec![None; desc.inputs.len()];
    for g in given {
        let (name, file) = match g.split_once('=') {
            Some((n, f)) => (Some(n), f),
            None => (None, g.as_str()),
        };
        let idx =
            match name {
                Some(n) => desc.inputs.iter().position(|t| t.name == n || t.ident == n).ok_or_else(|| {
                    Error::invalid(format!("no input named {n:?}; the model's inputs are: {}", names()))
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
                Error::invalid(format!(
                    "missing --input for {} ({}); the model's inputs are: {}",
                    desc.inputs[i].name,
                    desc.inputs[i].ident,
                    names()
                ))
            })
        })
        .collect()
}
