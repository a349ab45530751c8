//! Builds every model listed in `[package.metadata.mlf]` of Cargo.toml: compiles its C for the
//! target, writes its typed Rust module for `include_model!`, and checks its memory budgets.
fn main() {
    mlf_build::compile_listed().unwrap_or_else(|e| panic!("{e}"));
}
