//! Builds two models with external parameters and packs each one's parameters into
//! `OUT_DIR/<module>-params.tar` (what `cargo mlf split` + `cargo mlf pack` make), which the
//! test harness writes into the flash partition:
//!
//! - `digits_flash`: the repository's digits model, resident (loaded once into RAM);
//! - `kws_flash`: KWS int8 (graph) from ../shared/fixtures, streamed (each operator's
//!   parameters read from the partition just before it runs);
//! - `digits_slots`: the digits model, lazily loaded, with the public key `keys/test-only.pub`
//!   compiled in: three signed packs for A/B slots (`-a`, sequence 1; `-b`, sequence 2; `-c`,
//!   sequence 3 but signed with another key, `keys/other.key`).
use std::path::{Path, PathBuf};

fn build(model: &Path, vectors: &Path, name: &str, placement: mlf_build::Placement, key: Option<&Path>) -> PathBuf {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let split = out.join(format!("{name}-split"));
    let mut m = mlf_build::Model::open(model).name(name).params(placement).split_dir(&split);
    if let Some(key) = key {
        m = m.pack_key(key);
    }
    m.compile().unwrap_or_else(|e| panic!("{e}"));
    let archive = out.join(format!("{name}-params.tar"));
    mlf_build::pack_folder(&split, &archive).unwrap_or_else(|e| panic!("{e}"));
    device_vectors::Program::new(model, name)
        .params(&placement.to_string())
        .cases(vectors, usize::MAX)
        .write(&format!("{name}.rs"));
    split
}

/// The A/B slot packs of `digits_slots` (see the crate's doc).
fn slots(split: &Path) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let keys = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("keys");
    for (slot, sequence, key) in [("a", 1, "test-only.key"), ("b", 2, "test-only.key"), ("c", 3, "other.key")] {
        let options = mlf_build::PackOptions { sequence, sign_with: Some(keys.join(key)) };
        let archive = out.join(format!("digits_slots-{slot}.tar"));
        mlf_build::pack_folder_with(split, &archive, &options).unwrap_or_else(|e| panic!("{e}"));
    }
    println!("cargo::rerun-if-changed=keys");
}

fn main() {
    let digits = device_vectors::repo_root().join("examples/digits/model");
    build(&digits.join("digits.tar"), &digits, "digits_flash", mlf_build::Placement::Resident, None);
    let key =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("keys/test-only.pub");
    let split = build(&digits.join("digits.tar"), &digits, "digits_slots", mlf_build::Placement::Lazy, Some(&key));
    slots(&split);
    match device_vectors::fixture("mlf/kws-int8-graph") {
        Ok(dir) => {
            let model = dir.join("model.tar").canonicalize().expect("model.tar");
            build(&model, &dir, "kws_flash", mlf_build::Placement::Streamed, None);
        }
        Err(why) => device_vectors::missing("kws_flash.rs", &why),
    }
}
