//! A `#![no_std] #![no_main]` program (examples/no-std-host) builds and runs a model with the
//! runtime's default features (no std, no alloc), and its binary imports no allocator at all.

use std::process::Command;

#[test]
fn no_std_program_runs_a_model_without_a_heap() {
    let root = mlf_fixtures::workspace_root();
    let target = root.join("target/no-std");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["run", "--quiet", "--manifest-path"])
        .arg(root.join("examples/no-std-host/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no_std digits: predicted 2\n");

    use object::{Object, ObjectSymbol};
    let bin = std::fs::read(target.join("debug/no-std-host")).unwrap();
    let file = object::File::parse(&*bin).unwrap();
    let imports: Vec<String> =
        file.dynamic_symbols().filter(|s| s.is_undefined()).filter_map(|s| s.name().ok().map(str::to_string)).collect();
    for heap in ["malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc"] {
        assert!(!imports.iter().any(|i| i == heap), "the no_std program imports {heap}: {imports:?}");
    }
    assert!(!file.symbols().any(|s| s.name().is_ok_and(|n| n.contains("__rust_alloc"))), "a Rust allocator is linked");
}
