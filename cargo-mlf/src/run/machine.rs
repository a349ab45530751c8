//! The emulated devices `cargo mlf run --target` runs on: for each target triple, the QEMU
//! machine (the ones mlf's device tests use), its memory map, its instruction counter, and the
//! tools it needs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mlf_build::Error;

/// The CPU architecture (which runtime crate and linker scripts the program uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Cortex-M: cortex-m-rt, whose `link.x` includes `memory.x`.
    Arm,
    /// RV64: riscv-rt, whose `link.x` needs `-Tmemory.x` before it.
    Riscv,
}

/// A region of memory: start address and length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First address.
    pub origin: u64,
    /// Bytes.
    pub length: u64,
}

const fn region(origin: u64, length: u64) -> Region {
    Region { origin, length }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// An emulated device.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// The Rust target triple.
    pub target: &'static str,
    /// What it is, for messages.
    pub about: &'static str,
    /// The QEMU program.
    pub qemu: &'static str,
    /// The machine's QEMU arguments.
    pub args: &'static [&'static str],
    /// The architecture.
    pub arch: Arch,
    /// Code memory (`None`: the program runs from RAM, as on RV64 `virt`).
    pub flash: Option<Region>,
    /// RAM (on `virt`, the program's region of it).
    pub ram: Region,
    /// Where packed external parameters are loaded (`None`: the machine has no room).
    pub params: Option<Region>,
    /// Instructions per counter tick as a fraction (SysTick on the core clock under
    /// `-icount shift=0`; 1 for `minstret`).
    pub per_tick: (u64, u64),
    /// How the instructions are counted, for messages.
    pub counter: &'static str,
}

const MPS2_FLASH: Region = region(0, 4 * MIB);
const MPS2_RAM: Region = region(0x2000_0000, 4 * MIB);
/// The global offset table of position-independent objects (TVM's LLVM `lib0.o` reaches
/// `memcpy`, `memset`, … through it), placed after `.rodata` in `region`: a static image's GOT
/// holds link-time addresses and never changes, so it is read-only data. cortex-m-rt's and
/// riscv-rt's `link.x` give `.got` no memory and fail the link when it is not empty; this section,
/// inserted before theirs, takes the GOT's input sections first.
pub fn got(region: &str) -> String {
    format!(
        "SECTIONS\n{{\n  .mlf_got : ALIGN(4)\n  {{\n    *(.got .got.*);\n  }} > {region}\n}}\nINSERT AFTER .rodata;\n"
    )
}

/// The last MiB of the MPS2 boards' 4 MiB of code memory, as in mlf's device tests.
const MPS2_PARAMS: Region = region(0x0030_0000, MIB);

/// Every device, by target triple.
pub const MACHINES: &[Machine] = &[
    Machine {
        target: "thumbv7em-none-eabihf",
        about: "Cortex-M4F, QEMU mps2-an386",
        qemu: "qemu-system-arm",
        args: &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
        arch: Arch::Arm,
        flash: Some(MPS2_FLASH),
        ram: MPS2_RAM,
        params: Some(MPS2_PARAMS),
        per_tick: (40, 1),
        counter: "SysTick at 25 MHz",
    },
    Machine {
        target: "thumbv7em-none-eabi",
        about: "Cortex-M4 (soft float), QEMU mps2-an386",
        qemu: "qemu-system-arm",
        args: &["-machine", "mps2-an386", "-cpu", "cortex-m4"],
        arch: Arch::Arm,
        flash: Some(MPS2_FLASH),
        ram: MPS2_RAM,
        params: Some(MPS2_PARAMS),
        per_tick: (40, 1),
        counter: "SysTick at 25 MHz",
    },
    Machine {
        target: "thumbv7m-none-eabi",
        about: "Cortex-M3, QEMU mps2-an385",
        qemu: "qemu-system-arm",
        args: &["-machine", "mps2-an385", "-cpu", "cortex-m3"],
        arch: Arch::Arm,
        flash: Some(MPS2_FLASH),
        ram: MPS2_RAM,
        params: Some(MPS2_PARAMS),
        per_tick: (40, 1),
        counter: "SysTick at 25 MHz",
    },
    Machine {
        target: "thumbv6m-none-eabi",
        about: "Cortex-M0, QEMU microbit (256 KiB flash, 16 KiB RAM)",
        qemu: "qemu-system-arm",
        args: &["-machine", "microbit"],
        arch: Arch::Arm,
        flash: Some(region(0, 256 * KIB)),
        ram: region(0x2000_0000, 16 * KIB),
        params: None,
        per_tick: (125, 2),
        counter: "SysTick at 16 MHz",
    },
    Machine {
        target: "riscv64gc-unknown-none-elf",
        about: "RV64GC, QEMU virt -bios none",
        qemu: "qemu-system-riscv64",
        args: &["-machine", "virt", "-bios", "none"],
        arch: Arch::Riscv,
        flash: None,
        // 128 MiB at 0x8000_0000 by default, the device tree at its top: the program gets 64 MiB,
        // packed parameters the 32 MiB above them.
        ram: region(0x8000_0000, 64 * MIB),
        params: Some(region(0x8400_0000, 32 * MIB)),
        per_tick: (1, 1),
        counter: "minstret",
    },
];

impl Machine {
    /// The device for `target`, or an error listing the ones there are.
    pub fn for_target(target: &str) -> Result<&'static Machine, Error> {
        MACHINES.iter().find(|m| m.target == target).ok_or_else(|| {
            let known: Vec<&str> = MACHINES.iter().map(|m| m.target).collect();
            Error::invalid(format!(
                "cargo mlf run cannot emulate {target}: the targets it runs in QEMU are {} (or this computer's own)",
                known.join(", ")
            ))
        })
    }

    /// The program's `memory.x`: FLASH and RAM, and a PARAMS region kept out of the program when
    /// `partition` is set (on the MPS2 boards it is the last MiB of code memory). riscv-rt's
    /// regions are aliases of RAM.
    pub fn memory_x(&self, partition: bool) -> String {
        let line =
            |name: &str, r: Region| format!("  {name} : ORIGIN = {:#010x}, LENGTH = {}K\n", r.origin, r.length / KIB);
        let mut text = String::from("MEMORY\n{\n");
        if let Some(mut flash) = self.flash {
            if let Some(p) = self.params.filter(|p| partition && p.origin > flash.origin) {
                flash.length = flash.length.min(p.origin - flash.origin);
            }
            text.push_str(&line("FLASH", flash));
        }
        text.push_str(&line("RAM", self.ram));
        if let Some(p) = self.params.filter(|_| partition) {
            text.push_str(&line("PARAMS", p));
        }
        text.push_str("}\n");
        match self.arch {
            Arch::Riscv => {
                for r in ["TEXT", "RODATA", "DATA", "BSS", "HEAP", "STACK"] {
                    text.push_str(&format!("REGION_ALIAS(\"REGION_{r}\", RAM);\n"));
                }
                text.push_str(&got("REGION_RODATA"));
            }
            Arch::Arm => text.push_str(&got("FLASH")),
        }
        text
    }

    /// The program's `machine.rs` (see `templates/run-device/src/device.rs`).
    pub fn machine_rs(&self, partition: bool) -> String {
        let (address, bytes) = match self.params.filter(|_| partition) {
            Some(p) => (p.origin, p.length),
            None => (0, 0),
        };
        format!(
            "/// Instructions per counter tick ({}), as a fraction.\nconst PER_TICK: (u64, u64) = ({}, {});\n\
             /// The parameter partition's first address.\n#[allow(dead_code)]\nconst PARAMS_ADDRESS: usize = {address:#x};\n\
             /// The parameter partition's size (0: none).\nconst PARAMS_BYTES: usize = {bytes:#x};\n",
            self.counter, self.per_tick.0, self.per_tick.1
        )
    }

    /// The linker arguments: `-Tlink.x` (cortex-m-rt includes memory.x), or `-Tmemory.x
    /// -Tlink.x` (riscv-rt does not).
    pub fn link_args(&self) -> &'static [&'static str] {
        match self.arch {
            Arch::Arm => &["-Tlink.x"],
            Arch::Riscv => &["-Tmemory.x", "-Tlink.x"],
        }
    }

    /// The resolution of the instruction count (instructions per tick, rounded up).
    pub fn resolution(&self) -> u64 {
        self.per_tick.0.div_ceil(self.per_tick.1)
    }

    /// Checks that the Rust target and QEMU are installed and returns QEMU's path; the error
    /// says what to install.
    pub fn tools(&self) -> Result<PathBuf, Error> {
        if !target_installed(self.target) {
            return Err(Error::invalid(format!(
                "cargo mlf run --target {t} needs the Rust standard library for {t}: rustup target add {t}",
                t = self.target
            )));
        }
        self.qemu_for(&format!("cargo mlf run --target {}", self.target))
    }

    /// QEMU's path for this machine, or an error saying that `what` needs it and how to install
    /// it (the same words for `cargo mlf run --target` and a firmware crate's `cargo run`).
    pub fn qemu_for(&self, what: &str) -> Result<PathBuf, Error> {
        qemu(self.qemu).ok_or_else(|| {
            let package = if self.qemu == "qemu-system-arm" { "qemu-system-arm" } else { "qemu-system-misc" };
            Error::invalid(format!("{what} needs {}, which was not found", self.qemu)).with_help(format!(
                "install QEMU (Debian and Ubuntu: apt-get install {package}), or in an mlf checkout run \
                 .ci/device-tools, which unpacks it into .qemu/bin, where cargo mlf looks too"
            ))
        })
    }
}

fn runs(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Whether the standard library for `triple` is installed for the `rustc` cargo uses.
fn target_installed(triple: &str) -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).args(["--print", "target-libdir", "--target", triple]).output() else {
        return false;
    };
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    out.status.success()
        && std::fs::read_dir(&dir)
            .is_ok_and(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libcore-")))
}

/// The QEMU program `name`: on the `PATH`, or in `.qemu/bin` of the mlf checkout cargo-mlf was
/// built from (where `.ci/device-tools` unpacks it).
pub fn qemu(name: &str) -> Option<PathBuf> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|root| root.join(".qemu/bin").join(name));
    std::iter::once(PathBuf::from(name)).chain(checkout).find(|p| runs(Command::new(p).arg("--version")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_maps() {
        let m4 = Machine::for_target("thumbv7em-none-eabihf").unwrap();
        assert!(m4.memory_x(false).starts_with(
            "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K\n  RAM : ORIGIN = 0x20000000, LENGTH = 4096K\n}\n"
        ));
        assert!(m4.memory_x(false).ends_with("*(.got .got.*);\n  } > FLASH\n}\nINSERT AFTER .rodata;\n"));
        assert!(m4.memory_x(true).contains("FLASH : ORIGIN = 0x00000000, LENGTH = 3072K\n"));
        assert!(m4.memory_x(true).contains("PARAMS : ORIGIN = 0x00300000, LENGTH = 1024K\n"));
        let rv = Machine::for_target("riscv64gc-unknown-none-elf").unwrap();
        assert!(rv.memory_x(false).contains("REGION_ALIAS(\"REGION_STACK\", RAM);"));
        assert!(rv.memory_x(false).contains("} > REGION_RODATA\n}\nINSERT AFTER .rodata;\n"));
        assert!(rv.machine_rs(true).contains("PARAMS_ADDRESS: usize = 0x84000000;"));
        assert_eq!(rv.link_args(), ["-Tmemory.x", "-Tlink.x"]);
        assert_eq!(Machine::for_target("thumbv6m-none-eabi").unwrap().resolution(), 63);
        let e = Machine::for_target("xtensa-esp32-none-elf").unwrap_err().to_string();
        assert!(e.contains("cannot emulate xtensa-esp32-none-elf") && e.contains("thumbv6m-none-eabi"), "{e}");
    }

    #[test]
    fn missing_tools_say_what_to_install() {
        let host = crate::build::host_triple();
        let host: &'static str = Box::leak(host.into_boxed_str());
        let no_qemu = Machine { target: host, qemu: "qemu-system-mlf-absent", ..MACHINES[0] };
        let e = no_qemu.tools().unwrap_err().to_string();
        assert!(e.contains("needs qemu-system-mlf-absent") && e.contains(".ci/device-tools"), "{e}");
        let no_target = Machine { target: "thumbv7em-mlf-absent-eabihf", ..MACHINES[0] };
        let e = no_target.tools().unwrap_err().to_string();
        assert!(e.contains("rustup target add thumbv7em-mlf-absent-eabihf"), "{e}");
    }
}
