//! `cargo mlf qemu --target TRIPLE ELF`: runs a device program in QEMU, on the machine `cargo mlf
//! run --target` uses for that target, with semihosting for its output and exit status. It is
//! the `cargo run` runner of the firmware and k210 templates (`.cargo/config.toml`), so that
//! `cargo run` finds QEMU where `cargo mlf run --target` finds it (the `PATH`, or `.qemu/bin` of
//! the mlf checkout cargo-mlf was built from) and, without it, says what to install.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::run::machine::Machine;

/// Arguments of `qemu`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The target the program was built for; it chooses the QEMU machine (the one `cargo mlf run
    /// --target` uses).
    #[arg(long)]
    target: String,
    /// The program (an ELF), as cargo's runner passes it.
    elf: PathBuf,
    /// The program's arguments (passed by `cargo run -- ARGS`; a semihosting program gets none).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Runs the program and returns QEMU's exit status (the program's, through semihosting).
pub fn run(args: Args) -> ExitCode {
    let started = Machine::for_target(&args.target)
        .and_then(|m| Ok((m, m.qemu_for(&format!("`cargo run` for {}", args.target))?)));
    let (machine, qemu) = match started {
        Ok(found) => found,
        Err(e) => {
            crate::diag::error(&e);
            return ExitCode::FAILURE;
        }
    };
    if !args.args.is_empty() {
        eprintln!("note: the program's arguments are not passed on: it runs under QEMU without a command line");
    }
    let status = Command::new(&qemu)
        .args(machine.args)
        .args(["-nographic", "-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(&args.elf)
        .status();
    match status {
        Ok(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Err(e) => {
            crate::diag::error(&mlf_build::Error::invalid(format!("cannot run {}: {e}", qemu.display())));
            ExitCode::FAILURE
        }
    }
}
