//! Builds every model listed in `[package.metadata.mlf]` of Cargo.toml: compiles its C for the
//! target, writes its typed Rust module for `include_model!`, and checks its memory budgets. An
//! error fails the build with cargo's error message (no panic).
fn main() {
    mlf_build::compile_listed_or_exit();
}
