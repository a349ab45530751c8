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
    /// Sign the pack with this Ed25519 private key (PEM, PKCS#8: `cargo mlf keygen`, `openssl
    /// genpkey -algorithm ed25519`); code built with the public key refuses unsigned packs and
    /// packs signed with another key.
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
    /// The sequence number the header records: of two A/B slots, the pack with the larger one is
    /// used (give each update a larger number than the pack it replaces).
    #[arg(long, default_value_t = 0)]
    sequence: u64,
}

/// Arguments of `keygen`.
#[derive(clap::Args, Debug)]
pub struct KeygenArgs {
    /// Writes NAME.key (the private key: keep it off the device and out of the repository) and
    /// NAME.pub (the public key, compiled into the firmware).
    #[arg(long, short = 'o', value_name = "NAME")]
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
    // `detect`, not `sniff`: a gzipped TVM export (Relax `export_library`) is a model to split.
    if mlf_build::__private::read::detect::detect(&model)? == mlf_build::__private::FileKind::Kmodel {
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
    // What stayed in the code: constants too small to take out (a reference would cost as much).
    let kept = match (files, built.param_bytes_kept_in_code) {
        (_, 0) => String::new(),
        (0, k) => format!(
            "; nothing to take out: all {k} bytes of constants stayed in the code (each under {} bytes, \
             which a reference would cost as much as)",
            mlf_build::__private::plan::split::ArrayTable::THRESHOLD
        ),
        (_, k) => format!("; {k} bytes of small constants stayed in the code"),
    };
    eprintln!(
        "split {}: {files} parameter files ({} bytes) in {}, configure.json, code for {target} in {} (module `{}`, {:?} placement: {} bytes of RAM for parameters, {} bytes of arena){kept}",
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
    let options = mlf_build::PackOptions { sequence: args.sequence, sign_with: args.sign.clone() };
    let n = mlf_build::pack_folder_with(&args.dir, &args.out, &options)?;
    let signed = match &args.sign {
        Some(key) => format!(", signed with {}", key.display()),
        None => ", unsigned".to_string(),
    };
    eprintln!(
        "packed {n} files from {} into {} (sequence {}{signed})",
        args.dir.display(),
        args.out.display(),
        args.sequence
    );
    Ok(())
}

/// Runs `keygen`: a new key pair, never over an existing file.
pub fn keygen(args: KeygenArgs) -> Result<(), Error> {
    let with = |ext: &str| {
        let mut p = args.out.clone().into_os_string();
        p.push(ext);
        PathBuf::from(p)
    };
    let (private, public) = (with(".key"), with(".pub"));
    for p in [&private, &public] {
        if p.exists() {
            return Err(Error::invalid("exists already; keygen never overwrites a key").in_file(p));
        }
    }
    let key = mlf_build::__private::pack_sign::SigningKey::generate();
    write_new(&private, key.to_pem().as_bytes(), true)?;
    write_new(&public, mlf_build::__private::pack_sign::public_to_pem(&key.public()).as_bytes(), false)?;
    eprintln!(
        "wrote {} (private: sign packs with `cargo mlf pack --sign {}`; keep it secret) and {} (public: `pack_key` of the model)",
        private.display(),
        private.display(),
        public.display()
    );
    Ok(())
}

/// Writes a new file (refusing an existing one), readable by its owner only when `secret`.
fn write_new(path: &std::path::Path, data: &[u8], secret: bool) -> Result<(), Error> {
    use std::io::Write as _;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600);
    }
    let _ = secret;
    let mut f = o.open(path).in_file(path)?;
    f.write_all(data).in_file(path)
}
