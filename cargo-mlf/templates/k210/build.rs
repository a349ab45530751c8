//! Puts memory.x where the linker finds it (`-Tmemory.x` in .cargo/config.toml). Kmodels need
//! no build step: `include_model!` reads the file when the crate compiles. An error fails the
//! build with cargo's error message (no panic).
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::copy("memory.x", out.join("memory.x")) {
        mlf_build::report_error(format!("memory.x: {e}"));
    }
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=memory.x");
}
