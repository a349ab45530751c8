//! Runs an ELF under QEMU with semihosting and exact instruction counting (`-icount shift=0`),
//! with a time limit.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A QEMU machine the programs run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// `mps2-an386`, Cortex-M4F: 4 MiB of flash at 0, 4 MiB of RAM at 0x2000_0000.
    Mps2An386,
    /// `microbit`, Cortex-M0 (ARMv6-M): 256 KiB of flash, 16 KiB of RAM.
    Microbit,
    /// `virt` with `-bios none`, RV64GC: RAM at 0x8000_0000.
    Virt,
}

impl Machine {
    /// The QEMU program.
    pub fn program(self) -> &'static str {
        match self {
            Machine::Mps2An386 | Machine::Microbit => "qemu-system-arm",
            Machine::Virt => "qemu-system-riscv64",
        }
    }

    /// The machine's arguments.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Machine::Mps2An386 => &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
            Machine::Microbit => &["-machine", "microbit"],
            Machine::Virt => &["-machine", "virt", "-bios", "none"],
        }
    }
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// Exit status (`None` when it was killed at the time limit).
    pub status: Option<i32>,
    /// Standard output (the program's semihosting output).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The command line, for messages.
    pub command: String,
}

/// Runs `elf` on `machine` with `extra` QEMU arguments; kills QEMU after `limit`.
pub fn run(machine: Machine, elf: &Path, extra: &[OsString], limit: Duration) -> Run {
    let qemu: PathBuf =
        crate::tools::qemu(machine.program()).unwrap_or_else(|| panic!("{} not found", machine.program()));
    let mut cmd = Command::new(&qemu);
    cmd.args(machine.args())
        .args(["-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native", "-icount", "shift=0"])
        .args(extra)
        .arg("-kernel")
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let command = format!("{cmd:?}");
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{command}: {e}"));
    // Read both pipes while waiting, so a chatty program cannot block on a full pipe.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for QEMU") {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default(), command }
}
