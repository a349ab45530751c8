//! `cargo mlf split MODEL -o DIR` and `cargo mlf pack DIR -o FILE`: external parameters.
//!
//! `split` writes `DIR/params/<id>.bin` (one file per distinct parameter), `DIR/configure.json`
//! (identifier → file, size, hash, dtype, shape, names) and `DIR/code/<target>/` (the generated
//! module and the compiled C, which hold no parameter bytes). `pack` puts the three into one tar.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use mlf_build::__private::output::OutputDir;
use mlf_build::{Error, Placement};

use crate::build::host_triple;
use crate::io_error::InFile;

/// Arguments of `split`.
#[derive(clap::Args, Debug)]
pub struct SplitArgs {
    /// The model: an MLF `.tar` or directory.
    model: PathBuf,
    /// The folder to write.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Target triple the code is built for (default: this host).
    #[arg(long)]
    target: Option<String>,
    /// How the generated code holds the parameters: `resident`, `streamed` or `lazy` (as `run
    /// --params`; `--placement` is another name for it).
    #[arg(long = "params", alias = "placement", default_value = "resident", value_parser = external_placement())]
    placement: Placement,
    /// The module to read from an MLF that holds several.
    #[arg(long)]
    module: Option<String>,
}

/// Arguments of `pack`.
#[derive(clap::Args, Debug)]
pub struct PackArgs {
    /// A folder written by `cargo mlf split`.
    dir: PathBuf,
    /// The archive to write.
    #[arg(long, short = 'o')]
    out: PathBuf,
}

/// The placements `split` writes: the external ones.
fn external_placement() -> impl TypedValueParser<Value = Placement> {
    PossibleValuesParser::new(["resident", "streamed", "lazy"]).map(|s| s.parse::<Placement>().expect("a listed name"))
}

/// Runs `split`.
pub fn split(args: SplitArgs) -> Result<(), Error> {
    let host = host_triple();
    let target = args.target.clone().unwrap_or_else(|| host.clone());
    let placement = args.placement;
    let model = args.model.canonicalize().in_file(&args.model)?;
    if mlf_build::__private::sniff(&model)? == mlf_build::__private::FileKind::Kmodel {
        return Err(Error::unsupported(
            "a kmodel has no parameters to split: its weights are part of the file, which the interpreter reads in place",
        )
        .in_file(&args.model)
        .with_help("split takes TVM models (MLF archives); include the kmodel with include_model! as it is"));
    }
    let build_dir = tempfile::tempdir().map_err(Error::from)?;
    let mut m = mlf_build::Model::open(&model).params(placement).split_dir(&args.out);
    if let Some(module) = &args.module {
        m = m.module(module.clone());
    }
    let built = m.build_into(&model, build_dir.path(), "mlf-split", &target, &host, false)?;
    // The build wrote params/ and configure.json (refusing a folder that is not empty or an
    // earlier split, and any link in it); this target's code replaces what an earlier split left.
    let out = OutputDir::create(&args.out)?;
    let code_rel = format!("code/{}", file_part(&target)?);
    out.remove(&code_rel)?;
    let copy = |from: &std::path::Path, to: &str| -> Result<(), Error> {
        let data = std::fs::read(from).in_file(from)?;
        out.write(&format!("{code_rel}/{to}"), &data).map(drop)
    };
    copy(&built.rust_file, "model.rs")?;
    if let Some(lib) = &built.library {
        copy(lib, &lib.file_name().unwrap_or_default().to_string_lossy())?;
    }
    let code = args.out.join(&code_rel);
    let files = std::fs::read_dir(args.out.join("params")).map(|d| d.count()).unwrap_or(0);
    eprintln!(
        "split {}: {files} parameter files ({} bytes) in {}, configure.json, code for {target} in {} (module `{}`, {:?} placement: {} bytes of RAM for parameters, {} bytes of arena)",
        model.display(),
        built.external_param_bytes,
        args.out.join("params").display(),
        code.display(),
        built.module,
        placement,
        built.param_ram_bytes,
        built.arena_bytes
    );
    Ok(())
}

/// `name` as one path component, or an error (a target triple never has `/` or `..`).
fn file_part(name: &str) -> Result<&str, Error> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(Error::invalid(format!("{name:?} cannot name a folder")).at("--target"));
    }
    Ok(name)
}

/// Runs `pack`.
pub fn pack(args: PackArgs) -> Result<(), Error> {
    let n = mlf_build::pack_folder(&args.dir, &args.out)?;
    eprintln!("packed {n} files from {} into {}", args.dir.display(), args.out.display());
    Ok(())
}
