//! Sets `cfg(mlf_shared)` when ../shared/fixtures is present, so tests that include models from
//! it compile only then (a fresh clone without it still builds and passes).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(mlf_shared)");
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    println!("cargo::rerun-if-changed={}", shared.display());
    if shared.is_dir() {
        println!("cargo::rustc-cfg=mlf_shared");
    } else {
        println!("cargo::warning=../shared/fixtures not found: model tests that need it are skipped");
    }
}
