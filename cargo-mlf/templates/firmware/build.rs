//! Builds every model listed in `[package.metadata.mlf]` of Cargo.toml (compiles its C for the
//! target with the C cross compiler, writes its typed Rust module for `include_model!`, checks
//! its memory budgets), and puts memory.x where cortex-m-rt's link.x finds it. An error fails
//! the build with cargo's error message (no panic).
use std::path::PathBuf;

fn main() {
    mlf_build::compile_listed_or_exit();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::copy("memory.x", out.join("memory.x")) {
        mlf_build::report_error(format!("memory.x: {e}"));
    }
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=memory.x");
}
