//! Builds every model listed in `[package.metadata.mlf]` of Cargo.toml: compiles its C for the
//! target, writes its typed Rust module for `include_model!`, and checks its memory budgets.
fn main() {
    mlf_build::compile_listed().unwrap_or_else(|e| panic!("{e}"));
    // On an operating system (this computer), the program starts from the C library's startup
    // code, prints with its `write`, and the model's kernels take maths functions from libm.
    // On a microcontroller (target_os = "none") the board's runtime crate provides the start.
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os != "none") {
        println!("cargo::rustc-link-lib=c");
        println!("cargo::rustc-link-lib=m");
    }
}
