//! Every on-device program, where it runs and what it needs, and running one: build, QEMU,
//! parse, measure.

use std::ffi::OsString;
use std::time::Duration;

use crate::elf::{self, Memory};
use crate::firmware::{self, Built};
use crate::qemu::{self, Machine};
use crate::report::Report;
use crate::tools::{self, Need};

/// Cortex-M4F (hard float).
pub const THUMBV7EM: &str = "thumbv7em-none-eabihf";
/// Cortex-M0/M0+ (ARMv6-M: no compare-and-swap atomics, soft float).
pub const THUMBV6M: &str = "thumbv6m-none-eabi";
/// RV64GC without an operating system (a K210's cores).
pub const RISCV64: &str = "riscv64gc-unknown-none-elf";

/// A program of `firmware/` on one target.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// Its name in tests and in the table (`kws-graph`, `digits-m0`).
    pub name: &'static str,
    /// What it runs, for the table.
    pub about: &'static str,
    /// Its cargo package in `firmware/`.
    pub package: &'static str,
    /// Its binary.
    pub bin: &'static str,
    /// The target triple.
    pub target: &'static str,
    /// The QEMU machine.
    pub machine: Machine,
    /// It needs `../shared/fixtures`.
    pub fixtures: bool,
    /// It compiles a model's C (needs the C cross compiler on Arm).
    pub c: bool,
    /// The program the table compares its instruction count with (same run).
    pub peer: Option<&'static str>,
    /// A file of the package's `OUT_DIR` written into the parameter partition
    /// (`device_support::partition`, at 0x0030_0000) before the program starts.
    pub partition: Option<&'static str>,
    /// More files of the package's `OUT_DIR` written into flash, each at its address (the
    /// slots of an A/B program).
    pub slots: &'static [(&'static str, u32)],
}

const fn program(name: &'static str, about: &'static str, package: &'static str, bin: &'static str) -> Program {
    Program {
        name,
        about,
        package,
        bin,
        target: THUMBV7EM,
        machine: Machine::Mps2An386,
        fixtures: false,
        c: true,
        peer: None,
        partition: None,
        slots: &[],
    }
}

const fn vs(peer: &'static str, p: Program) -> Program {
    Program { peer: Some(peer), ..p }
}

const fn shared(p: Program) -> Program {
    Program { fixtures: true, ..p }
}

const fn riscv(p: Program) -> Program {
    Program { target: RISCV64, machine: Machine::Virt, c: false, ..p }
}

/// Every program, in the order of the README's table.
pub const PROGRAMS: &[Program] = &[
    program("digits", "digits MLP, graph, f32", "digits", "digits"),
    vs("digits", program("digits-exact", "digits, correctly rounded expf", "digits-exact", "digits-exact")),
    vs("digits-exact", program("digits-fma", "digits, fp_contract = true", "digits-fma", "digits-fma")),
    vs(
        "digits",
        Program {
            partition: Some("digits_flash-params.tar"),
            ..program("digits-flash", "digits, resident params via FlashArchive", "flash-params", "digits-flash")
        },
    ),
    vs("digits", shared(program("digits-aot", "digits MLP, AOT (C interface), f32", "kws", "digits-aot"))),
    shared(program("kws-graph", "KWS int8, graph", "kws", "kws-graph")),
    vs("kws-graph", shared(program("kws-aot", "KWS int8, AOT (C interface)", "kws", "kws-aot"))),
    vs("kws-graph", shared(program("kws-usmp", "KWS int8, AOT + USMP", "kws", "kws-usmp"))),
    vs(
        "kws-graph",
        shared(Program {
            partition: Some("kws_flash-params.tar"),
            ..program("kws-flash", "KWS int8, graph, params streamed via FlashArchive", "flash-params", "kws-flash")
        }),
    ),
    vs(
        "digits",
        Program {
            slots: &[
                ("digits_slots-a.tar", 0x30_0000),
                ("digits_slots-b.tar", 0x34_0000),
                ("digits_slots-c.tar", 0x38_0000),
            ],
            ..program("digits-slots", "digits, lazy params via signed A/B Slots", "flash-params", "digits-slots")
        },
    ),
    shared(Program { c: false, ..program("iris-v4-m4", "iris kmodel V4", "kmodels", "iris-v4") }),
    shared(program("arenas-two", "ResNet-8 graph + KWS AOT, one shared arena", "arenas", "two-models")),
    vs(
        "arenas-two",
        shared(program("arenas-two-apart", "the same, arenas of their own", "arenas-apart", "two-models")),
    ),
    shared(program("arenas-psram", "ResNet-8 + KWS AOT, shared arena in PSRAM", "arenas", "psram")),
    shared(program("arena-section", "KWS graph, its own arena in PSRAM (arena_section)", "arenas", "arena-section")),
    shared(program("arenas-three", "ResNet-8 + KWS AOT + iris kmodel, one arena", "arenas", "three-models")),
    vs(
        "arenas-three",
        shared(program("arenas-three-apart", "the same, arenas of their own", "arenas-apart", "three-models")),
    ),
    vs(
        "digits",
        Program {
            target: THUMBV6M,
            machine: Machine::Microbit,
            ..program("digits-m0", "digits on Cortex-M0 (soft float)", "digits", "digits")
        },
    ),
    shared(riscv(program("iris-v3-rv64", "iris kmodel V3", "kmodels", "iris-v3"))),
    shared(riscv(program("iris-v4-rv64", "iris kmodel V4", "kmodels", "iris-v4"))),
    shared(riscv(program("yolo-v4-rv64", "YOLO kmodel V4 (20 classes)", "kmodels", "yolo-v4"))),
];

/// The calibration programs (a loop of a known instruction count), one per machine.
pub const CALIBRATION: &[Program] = &[
    Program { c: false, ..program("calibrate-m4", "counter check", "device-support", "calibrate") },
    Program {
        c: false,
        target: THUMBV6M,
        machine: Machine::Microbit,
        ..program("calibrate-m0", "counter check", "device-support", "calibrate")
    },
    riscv(program("calibrate-rv64", "counter check", "device-support", "calibrate")),
];

/// The program called `name`.
pub fn find(name: &str) -> &'static Program {
    PROGRAMS.iter().chain(CALIBRATION).find(|p| p.name == name).unwrap_or_else(|| panic!("no device program {name}"))
}

impl Program {
    /// What the program needs.
    pub fn needs(&self) -> Vec<Need> {
        let mut needs = vec![Need::Target(self.target)];
        needs.push(match self.machine {
            Machine::Mps2An386 | Machine::Microbit => Need::QemuArm,
            Machine::Virt => Need::QemuRiscv,
        });
        if self.c && self.target.starts_with("thumb") {
            needs.push(Need::ArmGcc);
        }
        if self.fixtures {
            needs.push(Need::Fixtures);
        }
        needs
    }
}

/// A program's run.
#[derive(Debug)]
pub struct Outcome {
    /// What was built.
    pub built: Built,
    /// The QEMU run.
    pub run: qemu::Run,
    /// What it printed.
    pub report: Report,
    /// Flash and RAM of the ELF.
    pub memory: Memory,
}

/// Builds and runs `p` under QEMU (at most 10 minutes) and measures its ELF.
pub fn run_program(p: &Program) -> Outcome {
    let built = firmware::build(&firmware::workspace(), p.package, p.bin, p.target);
    let mut extra: Vec<OsString> = Vec::new();
    if let Some(file) = p.partition {
        let out = built.out_dir.as_ref().unwrap_or_else(|| panic!("{}: no build-script output", p.name));
        let image = out.join(file);
        assert!(image.is_file(), "{}: {} was not made by the build", p.name, image.display());
        extra.push("-device".into());
        extra.push(format!("loader,file={},addr=0x300000,force-raw=on", image.display()).into());
    }
    for (file, addr) in p.slots {
        let out = built.out_dir.as_ref().unwrap_or_else(|| panic!("{}: no build-script output", p.name));
        let image = out.join(file);
        assert!(image.is_file(), "{}: {} was not made by the build", p.name, image.display());
        extra.push("-device".into());
        extra.push(format!("loader,file={},addr={addr:#x},force-raw=on", image.display()).into());
    }
    let run = qemu::run(p.machine, &built.elf, &extra, Duration::from_secs(600));
    let report = Report::parse(&run.stdout);
    let memory = elf::measure(&built.elf).unwrap_or_else(|e| panic!("{e}"));
    Outcome { built, run, report, memory }
}

/// The test rule for a program: skipped (returns `None`) when a tool or the fixtures are
/// missing (see [`tools::require`]); otherwise it must end with status 0, every case and the
/// summary `PASS`, the stack measurement within the painted region and at most the stack the
/// model's module states (`STACK_BYTES`), and no symbol of mlf's in
/// `.data` (see [`Memory::mlf_data`]). The summary line is
/// echoed to the test's output.
pub fn check(test: &str, name: &str) -> Option<Outcome> {
    let p = find(name);
    if !tools::require(test, &p.needs()) {
        return None;
    }
    let o = run_program(p);
    let out = &o.run.stdout;
    let context = || format!("{}\nstdout:\n{out}\nstderr:\n{}", o.run.command, o.run.stderr);
    assert_eq!(o.run.status, Some(0), "{name}: QEMU ended with {:?}\n{}", o.run.status, context());
    assert!(o.report.errors.is_empty(), "{name}: {:?}\n{}", o.report.errors, context());
    let summary = o.report.summary(out);
    assert_eq!(summary.get("result"), Some("PASS"), "{}", context());
    assert!(!o.report.cases.is_empty(), "{}", context());
    for case in &o.report.cases {
        assert_eq!(case.get("result"), Some("PASS"), "{}", context());
        assert!(case.get("stack_overflowed").is_none(), "{}", context());
    }
    assert_eq!(summary.number("cases"), Some(o.report.cases.len() as u64), "{}", context());
    // Every module states the stack a run needs (`STACK_BYTES`: from the compiler's frames for
    // a TVM model, an allowance for the kmodel interpreter); the painted high-water of every
    // run, a kmodel's first run included, must be within it.
    // (The counter's calibration program runs no model.)
    if p.c || p.package == "kmodels" {
        let stated = summary.number("stated_stack");
        let measured = summary.number("max_stack");
        assert!(stated.is_some(), "{name}: the program does not print its module's STACK_BYTES\n{}", context());
        assert!(measured <= stated, "{name}: stack {measured:?} > stated STACK_BYTES {stated:?}\n{}", context());
    }
    // Nothing of mlf's is initialised data: its statics are all-zero (`.bss`) or read-only.
    let module = summary.get("model").unwrap_or("").replace('-', "_");
    let mlf_data = o.memory.mlf_data(&module);
    assert!(mlf_data.is_empty(), "{name}: mlf's symbols in .data: {mlf_data:?}");
    eprintln!("{name}: {}", out.lines().rev().find(|l| l.contains("model=")).unwrap_or(""));
    Some(o)
}
