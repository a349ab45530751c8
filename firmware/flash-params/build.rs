//! Builds two models with external parameters and packs each one's parameters into
//! `OUT_DIR/<module>-params.tar` (what `cargo mlf split` + `cargo mlf pack` make), which the
//! test harness writes into the flash partition:
//!
//! - `digits_flash`: the repository's digits model, resident (loaded once into RAM);
//! - `kws_flash`: KWS int8 (graph) from ../shared/fixtures, streamed (each operator's
//!   parameters read from the partition just before it runs).
use std::path::{Path, PathBuf};

fn build(model: &Path, vectors: &Path, name: &str, placement: mlf_build::Placement) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let split = out.join(format!("{name}-split"));
    mlf_build::Model::open(model)
        .name(name)
        .params(placement)
        .split_dir(&split)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let archive = out.join(format!("{name}-params.tar"));
    mlf_build::pack_folder(&split, &archive).unwrap_or_else(|e| panic!("{e}"));
    device_vectors::Program::new(model, name).cases(vectors, usize::MAX).write(&format!("{name}.rs"));
}

fn main() {
    let digits = device_vectors::repo_root().join("examples/digits/model");
    build(&digits.join("digits.tar"), &digits, "digits_flash", mlf_build::Placement::Resident);
    match device_vectors::fixture("mlf/kws-int8-graph") {
        Ok(dir) => {
            let model = dir.join("model.tar").canonicalize().expect("model.tar");
            build(&model, &dir, "kws_flash", mlf_build::Placement::Streamed);
        }
        Err(why) => device_vectors::missing("kws_flash.rs", &why),
    }
}
