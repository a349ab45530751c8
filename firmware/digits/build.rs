//! Builds the model listed in Cargo.toml (the repository's digits model) and writes its
//! `include_model!` line and reference vectors into `OUT_DIR/model.rs`; sets `cfg(fp_contract)`
//! when the entry lets the C compiler fuse multiply-adds. Shared by `digits`, `digits-exact`
//! and `digits-fma`.
fn main() {
    let built = mlf_build::compile_listed().unwrap_or_else(|e| panic!("{e}"));
    let model = &built[0].model;
    let dir = model.parent().expect("the model's folder");
    device_vectors::Program::new(model, "digits").cases(dir, 10).graph_facts(model).write("model.rs");
    // The program requires bit-exact outputs unless the model's C may fuse multiply-adds.
    println!("cargo::rustc-check-cfg=cfg(fp_contract)");
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
        .join("Cargo.toml");
    let listed = mlf_build::__private::manifest::Manifest::read(&manifest).unwrap_or_else(|e| panic!("{e}"));
    if listed.is_some_and(|m| m.models.iter().any(|e| e.fp_contract == Some(true))) {
        println!("cargo::rustc-cfg=fp_contract");
    }
}
