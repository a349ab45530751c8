//! Writes the `memory.x` of the QEMU machine the programs run on for `$TARGET` into `OUT_DIR`
//! and puts it on the linker's search path (cortex-m-rt's and riscv-rt's `link.x` read it; the
//! search path reaches every program that depends on this crate), and sets `cfg(machine = …)`:
//! thumbv7em/thumbv7m → `mps2` (mps2-an386/an385), thumbv6m → `microbit`, riscv64 → `virt`.
use std::path::PathBuf;

/// MPS2 AN385/AN386/AN500 (Cortex-M3/M4/M7): 4 MiB of code memory at 0, used as 3 MiB of flash
/// for the program and a 1 MiB parameter partition at 0x0030_0000 (see `partition`), 4 MiB
/// of SRAM and a second RAM, the board's 16 MiB of PSRAM at 0x2100_0000, where the section
/// `.psram` (uninitialised, `NOLOAD`) goes: a model's arena placed there (issue 28).
const MPS2: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 3M\n  PARAMS : ORIGIN = 0x00300000, LENGTH = 1M\n  RAM : ORIGIN = 0x20000000, LENGTH = 4M\n  PSRAM : ORIGIN = 0x21000000, LENGTH = 16M\n}\n\
SECTIONS\n{\n  .psram (NOLOAD) : ALIGN(16)\n  {\n    *(.psram .psram.*);\n  } > PSRAM\n}\nINSERT AFTER .bss;\n\
SECTIONS\n{\n  .mlf_got : ALIGN(4)\n  {\n    *(.got .got.*);\n  } > FLASH\n}\nINSERT AFTER .rodata;\n";

/// BBC micro:bit (nRF51822, Cortex-M0): 256 KiB of flash, 16 KiB of RAM. The v6-M programs run
/// on it because QEMU's Cortex-M0 refuses v7-M instructions that a Cortex-M3 would run.
const MICROBIT: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 16K\n}\n\
SECTIONS\n{\n  .mlf_got : ALIGN(4)\n  {\n    *(.got .got.*);\n  } > FLASH\n}\nINSERT AFTER .rodata;\n";

/// Every map ends with a place for the global offset table of position-independent objects
/// (TVM's LLVM `lib0.o`): constant in a static image, so after `.rodata`; cortex-m-rt's and
/// riscv-rt's `link.x` give `.got` no memory.
///
/// QEMU `virt`: RAM at 0x8000_0000 (128 MiB by default; the device tree sits at its top, so 64 MiB are used); everything lives there, as on a K210
/// whose program is loaded into SRAM.
const VIRT: &str = "MEMORY\n{\n  RAM : ORIGIN = 0x80000000, LENGTH = 64M\n}\n\
REGION_ALIAS(\"REGION_TEXT\", RAM);\nREGION_ALIAS(\"REGION_RODATA\", RAM);\nREGION_ALIAS(\"REGION_DATA\", RAM);\n\
REGION_ALIAS(\"REGION_BSS\", RAM);\nREGION_ALIAS(\"REGION_HEAP\", RAM);\nREGION_ALIAS(\"REGION_STACK\", RAM);\n\
SECTIONS\n{\n  .mlf_got : ALIGN(4)\n  {\n    *(.got .got.*);\n  } > REGION_RODATA\n}\nINSERT AFTER .rodata;\n";

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo::rustc-check-cfg=cfg(machine, values(\"mps2\", \"microbit\", \"virt\"))");
    let (machine, memory) = if target.starts_with("thumbv6m") {
        ("microbit", MICROBIT)
    } else if target.starts_with("thumb") {
        ("mps2", MPS2)
    } else if target.starts_with("riscv") {
        ("virt", VIRT)
    } else {
        // A host build (`cargo check` on this computer): nothing to link.
        return;
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("memory.x"), memory).expect("write memory.x");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rustc-cfg=machine=\"{machine}\"");
    println!("cargo::rerun-if-changed=build.rs");
}
