//! The tools the on-device tests need, and the rule for a missing one: outside CI the test is
//! skipped with one line naming what to install; with `CI=true` it fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Something a device test needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// The Rust standard library for a target triple (`rustup target add`).
    Target(&'static str),
    /// `qemu-system-arm`.
    QemuArm,
    /// `qemu-system-riscv64`.
    QemuRiscv,
    /// `arm-none-eabi-gcc` with newlib, for the models' C on Cortex-M.
    ArmGcc,
    /// `riscv64-unknown-elf-gcc` with picolibc, for the models' C on RV64.
    RiscvGcc,
    /// The shared fixtures (`../shared/fixtures`): absent fixtures skip the test even in CI,
    /// as every other fixture test does.
    Fixtures,
}

impl Need {
    /// What to install, in words.
    fn install(self) -> String {
        match self {
            Need::Target(t) => format!("the Rust target {t} (rustup target add {t})"),
            Need::QemuArm => "qemu-system-arm".into(),
            Need::QemuRiscv => "qemu-system-riscv64".into(),
            Need::ArmGcc => "arm-none-eabi-gcc with newlib (gcc-arm-none-eabi libnewlib-arm-none-eabi)".into(),
            Need::RiscvGcc => {
                "riscv64-unknown-elf-gcc with picolibc (gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)".into()
            }
            Need::Fixtures => "../shared/fixtures".into(),
        }
    }

    fn present(self) -> bool {
        match self {
            Need::Target(t) => target_installed(t),
            Need::QemuArm => qemu("qemu-system-arm").is_some(),
            Need::QemuRiscv => qemu("qemu-system-riscv64").is_some(),
            Need::ArmGcc => runs(Command::new(arm_gcc()).arg("--version")),
            Need::RiscvGcc => runs(Command::new("riscv64-unknown-elf-gcc").arg("--version")),
            Need::Fixtures => mlf_fixtures::fixtures_dir().is_some(),
        }
    }
}

/// The repository's root.
pub fn root() -> PathBuf {
    mlf_fixtures::workspace_root()
}

/// `true` when running in CI (`CI=true`), where a missing tool is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Every tool some device test needs.
const ALL_TOOLS: [Need; 7] = [
    Need::Target("thumbv7em-none-eabihf"),
    Need::Target("thumbv6m-none-eabi"),
    Need::Target("riscv64gc-unknown-none-elf"),
    Need::QemuArm,
    Need::QemuRiscv,
    Need::ArmGcc,
    Need::RiscvGcc,
];

/// Checks that everything `needs` lists is there. When something is missing: with `CI=true` a
/// missing tool panics, naming it; otherwise (and for absent fixtures) the test is skipped:
/// `false` is returned, and the first skip of the test program prints one line naming every
/// device tool missing on this machine. The line goes straight to the terminal (the test
/// harness would hide it).
pub fn require(test: &str, needs: &[Need]) -> bool {
    let missing: Vec<Need> = needs.iter().copied().filter(|n| !n.present()).collect();
    if missing.is_empty() {
        return true;
    }
    let tool_missing = missing.iter().any(|n| *n != Need::Fixtures);
    if tool_missing && in_ci() {
        let tools: Vec<String> = missing.iter().filter(|n| **n != Need::Fixtures).map(|n| n.install()).collect();
        panic!("{test}: CI=true and the device tests need {}: run .ci/device-tools", tools.join(", "));
    }
    static SAID: std::sync::Mutex<[bool; 2]> = std::sync::Mutex::new([false; 2]);
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    let kind = usize::from(tool_missing);
    if !said[kind] {
        said[kind] = true;
        let line = if tool_missing {
            let all: Vec<String> = ALL_TOOLS.iter().filter(|n| !n.present()).map(|n| n.install()).collect();
            format!("SKIP device tests: install {} (`.ci/device-tools` installs them all)\n", all.join(", "))
        } else {
            format!("SKIP device tests needing ../shared/fixtures (e.g. {test}): it is not present\n")
        };
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    false
}

/// The C cross compiler for Cortex-M (`CC_thumbv7em_none_eabihf`'s default in the `cc` crate).
fn arm_gcc() -> String {
    "arm-none-eabi-gcc".into()
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

/// The QEMU program `name`: on the `PATH`, or unpacked by `.ci/device-tools` into
/// `.qemu/bin` of the repository. `None` when neither starts.
pub fn qemu(name: &str) -> Option<PathBuf> {
    let local = root().join(".qemu/bin").join(name);
    [PathBuf::from(name), local].into_iter().find(|p| runs(Command::new(p).arg("--version")))
}

/// A `PATH` with the repository's `.qemu/bin` in front (for `cargo run` of a crate whose
/// runner is `qemu-system-…`).
pub fn path_with_qemu() -> std::ffi::OsString {
    let mut dirs = vec![root().join(".qemu/bin")];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// The folder all firmware builds share (host build dependencies are compiled once).
pub fn target_dir() -> PathBuf {
    root().join("target/device")
}

/// `cargo` as the test runs it (`$CARGO`), else from the `PATH`.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| Path::new("cargo").to_path_buf())
}
