//! Puts memory.x where the linker finds it (`-Tmemory.x` in .cargo/config.toml). Kmodels need
//! no build step: `include_model!` reads the file when the crate compiles.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("memory.x");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=memory.x");
}
