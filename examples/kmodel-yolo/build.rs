//! Sets `cfg(mlf_shared)` when ../shared/fixtures (beside the repository) is present: the
//! example's model and picture come from there and are not part of the repository.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(mlf_shared)");
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/kmodel");
    println!("cargo::rerun-if-changed={}", shared.display());
    if shared.is_dir() {
        println!("cargo::rustc-cfg=mlf_shared");
    }
}
