//! `cargo mlf`: the command-line front door of mlf.
//!
//! Invoked by cargo as `cargo-mlf mlf <command> …` (so `cargo mlf inspect x.tar` works once the
//! binary is installed), directly as `cargo-mlf <command> …`, or from the workspace as
//! `cargo run -p cargo-mlf -- mlf <command> …`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod build;
mod crate_name;
mod diag;
mod inspect;
mod io_error;
mod new;
mod plan;
mod qemu;
mod run;
mod split;
mod template;

/// Turn compiled neural-network models (TVM Model Library Format, Kendryte kmodel) into typed,
/// statically allocated Rust: inspect, run, split, pack, build, new and plan.
#[derive(Parser, Debug)]
#[command(name = "cargo mlf", bin_name = "cargo mlf", version)]
struct Cli {
    /// Colour the messages: auto (on a terminal, unless NO_COLOR is set), always or never
    /// (default: CARGO_TERM_COLOR, else auto).
    #[arg(long, global = true, value_enum, value_name = "WHEN")]
    color: Option<diag::Color>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show what is inside a model: executor, interface, inputs, outputs, parameters, memory.
    Inspect(inspect::Args),
    /// Run a model once on this host (built exactly as a user's crate builds it) and write its
    /// outputs as `<output name>.npy`.
    ///
    /// Inputs come from `--input NAME=FILE`, or are filled with `--fill zeros|ones|random`;
    /// `--print-top N` prints each output's N largest values. The program is built in a cache
    /// folder (`--build-dir`; by default `$CARGO_TARGET_DIR/mlf-run`, else `~/.cache/mlf/run`),
    /// never in the current folder; the first build takes about a minute.
    ///
    /// Prints `running <program>` and, for external parameters, `parameters from <path>` on
    /// stderr. With `MLF_RUN_TIMING=1` in the environment the program also prints the
    /// nanoseconds from taking the model to parameters ready and to the first result.
    Run(run::Args),
    /// Split a model's parameters from its code: one file per parameter, `configure.json`, and
    /// the code built for a target.
    Split(split::SplitArgs),
    /// Pack a split folder into one archive (with a header binding it to its model, a sequence
    /// number for A/B slots, and optionally an Ed25519 signature).
    Pack(split::PackArgs),
    /// Make an Ed25519 key pair for signing parameter packs: NAME.key (private, PEM) and
    /// NAME.pub (public, PEM, for `Model::pack_key` / `pack_key = "…"`).
    Keygen(split::KeygenArgs),
    /// Check every model listed in `[package.metadata.mlf]` (reader, C for the target,
    /// budgets), print its memory, then run `cargo build` with the arguments given, and measure
    /// the firmware it links against the package's board.
    ///
    /// The target is cargo's: each `--target` given, else `build.target` (`--config`,
    /// `$CARGO_BUILD_TARGET`, `.cargo/config.toml` from the current folder up, then
    /// `$CARGO_HOME/config.toml`), else the host; the C is compiled with the rustflags cargo
    /// gives rustc for it.
    Build(build::Args),
    /// Create a crate that runs a model: a host program, Cortex-M firmware or K210 firmware
    /// (both run in QEMU by `cargo run`).
    New(new::Args),
    /// Show a model's static memory plan, and draw it as SVG.
    Plan(plan::Args),
    /// Run a device program in QEMU on the machine `run --target` uses (the `cargo run` runner
    /// of the firmware and k210 templates).
    Qemu(qemu::Args),
}

fn main() -> ExitCode {
    // cargo runs `cargo-mlf mlf <args>`; accept the bare form too.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "mlf") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    diag::set_color(cli.color);
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Run(a) => run::run(a),
        Command::Split(a) => split::split(a),
        Command::Pack(a) => split::pack(a),
        Command::Keygen(a) => split::keygen(a),
        Command::Build(a) => return build::run(a.with_color(cli.color)),
        Command::New(a) => new::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Qemu(a) => return qemu::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            diag::error(&e);
            ExitCode::FAILURE
        }
    }
}
