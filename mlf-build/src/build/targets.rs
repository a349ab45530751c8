//! Facts about target triples the build needs: the architecture a triple names, whether an
//! object file is for it (its architecture here; its core and float ABI in `object_abi`),
//! whether its Arm core has the DSP extension, and the device targets mlf supports.

use crate::error::{Error, Result};

/// The device targets `inspect` reports on: every Cortex-M and RISC-V target mlf supports.
pub const DEVICE_TARGETS: &[&str] = &[
    "thumbv6m-none-eabi",
    "thumbv7m-none-eabi",
    "thumbv7em-none-eabi",
    "thumbv7em-none-eabihf",
    "riscv64gc-unknown-none-elf",
];

/// The architecture part of a target triple, normalised (`thumbv7em` → `arm`).
pub fn triple_arch(triple: &str) -> &str {
    let arch = triple.split('-').next().unwrap_or("");
    match arch {
        a if a.starts_with("thumb") || a.starts_with("armv") || a == "arm" => "arm",
        a if a.starts_with("riscv32") => "riscv32",
        a if a.starts_with("riscv64") => "riscv64",
        "i686" | "i586" | "i386" => "x86",
        a => a,
    }
}

/// Refuses an object file built for another architecture than `target`, naming both.
pub fn check_object_arch(member: &str, bytes: &[u8], target: &str) -> Result<()> {
    use object::Object;
    let file = object::File::parse(bytes).map_err(|e| Error::invalid(format!("{member}: not an object file: {e}")))?;
    let obj_arch = match file.architecture() {
        object::Architecture::Aarch64 => "aarch64",
        object::Architecture::Arm => "arm",
        object::Architecture::X86_64 => "x86_64",
        object::Architecture::I386 => "x86",
        object::Architecture::Riscv32 => "riscv32",
        object::Architecture::Riscv64 => "riscv64",
        other => return Err(Error::unsupported(format!("{member}: object architecture {other:?} is not supported"))),
    };
    let want = triple_arch(target);
    if obj_arch != want {
        return Err(Error::unsupported(format!(
            "{member} is code for {obj_arch} (LLVM codegen for another machine) and cannot be linked into a {target} build; rebuild the model for this target or use the `c` target"
        )));
    }
    super::object_abi::check_object_abi(member, &file, target)
}

/// Whether the target's core has the Arm DSP extension, with the core's name; `None` for a
/// target that is not 32-bit Arm.
pub fn arm_dsp(target: &str) -> Option<(bool, &'static str)> {
    let arch = target.split('-').next().unwrap_or("");
    Some(match arch {
        a if a.starts_with("thumbv6m") => (false, "Cortex-M0/M0+, ARMv6-M"),
        a if a.starts_with("thumbv7m") => (false, "Cortex-M3, ARMv7-M"),
        a if a.starts_with("thumbv7em") => (true, "Cortex-M4/M7, ARMv7E-M"),
        a if a.starts_with("thumbv8m.base") => (false, "Cortex-M23, ARMv8-M Baseline"),
        a if a.starts_with("thumbv8m.main") => (false, "ARMv8-M Mainline without the optional DSP extension"),
        a if a.starts_with("thumb") || a.starts_with("arm") => (true, "Arm A/R-profile"),
        _ => return None,
    })
}

/// The host's target triple: the host of `$RUSTC` (or `rustc`), as `rustc -vV` reports it.
pub fn host_triple() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = std::process::Command::new(rustc).arg("-vV").output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(|h| h.trim().to_string()))
}
