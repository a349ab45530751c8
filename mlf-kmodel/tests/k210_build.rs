//! Builds `k210-check` (a no_std program that runs a V3 and a V4 kmodel on the K210's KPU
//! through `mlf_kmodel::kpu::k210`) for riscv64gc-unknown-none-elf, links it, and reads the ELF:
//! the plans and main memories are zero-initialised statics in `.bss`, no static is a KPU RAM
//! copy, and the static RAM the program allocates for them is what the parsed model says the
//! K210 backend needs; the device-model state, one static as generated modules have it, is in
//! `.bss` too. Skips with one line when the target is not installed, unless `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_kmodel::{Backend, Model};
use object::{Object, ObjectSection, ObjectSymbol, SectionKind};

const TARGET: &str = "riscv64gc-unknown-none-elf";

fn target_installed() -> bool {
    let out = Command::new("rustup").args(["target", "list", "--installed"]).output();
    out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == TARGET))
}

fn write_models(dir: &Path) -> (PathBuf, PathBuf) {
    let v3 = dir.join("v3_conv.kmodel");
    let v4 = dir.join("v4_conv.kmodel");
    std::fs::write(&v3, mlf_fixtures::kmodel_synth::v3_conv()).unwrap();
    std::fs::write(&v4, mlf_fixtures::kmodel_synth::v4_conv().0).unwrap();
    (v3, v4)
}

#[test]
#[cfg_attr(miri, ignore = "runs cargo and a cross linker, which Miri cannot")]
fn the_k210_driver_builds_and_links_for_riscv64gc_with_its_memory_in_bss() {
    if !target_installed() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but the {TARGET} target is missing: rustup target add {TARGET}");
        }
        eprintln!("SKIP k210 build: the {TARGET} target is not installed (rustup target add {TARGET})");
        return;
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = here.parent().unwrap().join("target").join("k210-check");
    std::fs::create_dir_all(&target_dir).unwrap();
    let (v3, v4) = write_models(&target_dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(here.join("k210-check/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("K210_CHECK_V3", &v3)
        .env("K210_CHECK_V4", &v4)
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(out.status.success(), "k210-check did not build:\n{}", String::from_utf8_lossy(&out.stderr));
    let elf = std::fs::read(target_dir.join(TARGET).join("release/k210-check")).unwrap();
    let file = object::File::parse(&*elf).unwrap();
    assert_eq!(file.architecture(), object::Architecture::Riscv64);
    let section_of = |name: &str| {
        let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("no symbol {name}"));
        let sec = file.section_by_index(sym.section_index().unwrap()).unwrap();
        (sec.name().unwrap().to_string(), sec.kind(), sym.size(), sym.address())
    };
    let mut statics = 0;
    for (name, model) in [("V3", &v3), ("V4", &v4)] {
        let bytes = std::fs::read(model).unwrap();
        let m = Model::parse(&bytes).unwrap();
        let need = m.requirements().for_backend(Backend::K210);
        assert_eq!(need.kpu_ram, 0);
        for sym in [format!("PLAN_{name}"), format!("MAIN_{name}")] {
            let (sec, kind, size, addr) = section_of(&sym);
            eprintln!("{sym}: {size} bytes in {sec} at {addr:#x}");
            assert_eq!(kind, SectionKind::UninitializedData, "{sym} is in {sec}, not .bss");
            assert!((0x8000_0000..0x8060_0000).contains(&addr), "{sym} at {addr:#x} is outside the CPU's SRAM");
            if sym.starts_with("MAIN") {
                // The arena, 64-byte aligned, behind its taken flag.
                assert!(size >= need.main && size <= need.main + 128, "{sym}: {size} bytes for {need:?}");
            }
            statics += size;
        }
    }
    // The device-model state, one struct as generated modules have it, is zero too.
    let (sec, kind, size, _) = section_of("DEVICE_STATE");
    eprintln!("DEVICE_STATE: {size} bytes in {sec}");
    assert_eq!(kind, SectionKind::UninitializedData, "DEVICE_STATE is in {sec}, not .bss");
    // Nothing of KPU RAM's size is allocated: the driver uses the chip's own.
    let biggest = file.symbols().map(|s| s.size()).max().unwrap_or(0);
    assert!(biggest < 64 * 1024, "a {biggest}-byte symbol: a KPU RAM copy?");
    let data: u64 = file.sections().filter(|s| s.kind() == SectionKind::Data).map(|s| s.size()).sum();
    eprintln!("k210-check: {statics} bytes of plans and main memory in .bss; .data {data} bytes");
}
