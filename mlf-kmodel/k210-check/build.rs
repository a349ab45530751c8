//! Puts `memory.x` on the linker path and writes `models.rs`: each model's bytes and the
//! memory figures the K210 backend needs, computed from the parsed model (as mlf's build step
//! would).

use std::io::Write;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::copy("memory.x", out.join("memory.x")).unwrap();
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rustc-link-arg=-Tmemory.x");
    println!("cargo::rustc-link-arg=-Tlink.x");
    println!("cargo::rerun-if-changed=memory.x");
    let mut f = std::fs::File::create(out.join("models.rs")).unwrap();
    for (name, var) in [("V3", "K210_CHECK_V3"), ("V4", "K210_CHECK_V4")] {
        println!("cargo::rerun-if-env-changed={var}");
        let path = std::env::var(var).unwrap_or_else(|_| panic!("{var} names the model file"));
        println!("cargo::rerun-if-changed={path}");
        let bytes = std::fs::read(&path).unwrap();
        let m = mlf_kmodel::Model::parse(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mem = m.requirements().for_backend(mlf_kmodel::Backend::K210);
        let dev = m.requirements().for_backend(mlf_kmodel::Backend::DeviceModel);
        writeln!(
            f,
            "pub mod {} {{ pub const STEPS: usize = {}; pub const MAIN: usize = {}; pub const SCRATCH: usize = {}; \
             pub const INPUT: usize = {}; pub const DEVICE_KPU_RAM: usize = {}; pub const DEVICE_SCRATCH: usize = {}; }}",
            name.to_lowercase(),
            m.steps(),
            mem.main,
            mem.scratch,
            m.input().bytes,
            dev.kpu_ram,
            dev.scratch,
        )
        .unwrap();
    }
}
