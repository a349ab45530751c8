//! Builds every model listed in `[package.metadata.mlf]` of Cargo.toml (compiles its C for the
//! target with the C cross compiler, writes its typed Rust module for `include_model!`, checks
//! its memory budgets), and puts memory.x where cortex-m-rt's link.x finds it.
use std::path::PathBuf;

fn main() {
    mlf_build::compile_listed().unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("memory.x");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=memory.x");
}
