//! `cargo mlf inspect PATH [--json] [--module NAME]`.

use std::path::PathBuf;

use mlf_build::ReadOptions;

/// Arguments of `inspect`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A model or export: an MLF `.tar` or extracted directory, a kmodel, a TVM export
    /// (`.so`, `.o`, `devc.c`, raw blob, `.tar`), a `.params` file, or a split folder or packed
    /// parameter archive (`cargo mlf split`, `cargo mlf pack`).
    path: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// The module to read from an MLF that holds several (metadata version 7).
    #[arg(long)]
    module: Option<String>,
}

/// Runs `inspect`.
pub fn run(args: Args) -> Result<(), mlf_build::Error> {
    let (json, table) = mlf_build::__private::inspect::inspect_path(&args.path, &ReadOptions { module: args.module })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json).expect("JSON"));
    } else {
        print!("{table}");
    }
    Ok(())
}
