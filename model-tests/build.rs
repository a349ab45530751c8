//! Builds the models under test. The repository's own digits model always; the fixtures in
//! ../shared/fixtures when present (and then sets `cfg(mlf_shared)` so the tests that use them
//! compile).

use std::path::Path;

/// Graph-executor fixtures run end to end (folder names under fixtures/mlf).
const GRAPH_FIXTURES: &[&str] = &[
    "arduino-demos-kws-yesno-graph-v4",
    "digits-mlp-graph",
    "digits-mlp-graph-linked",
    "guberti-tvm-graph-v2-cifar-lp0-syslib",
    "gvsoc-sine-graph-v7",
    "kws-int8-graph",
    "multi-io-graph",
    "resnet8-int8-graph",
];

fn build(path: &str) {
    mlf_build::Model::open(path).compile().unwrap_or_else(|e| panic!("{e}"));
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(mlf_shared)");
    build("../examples/digits/model/digits.tar");
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    println!("cargo::rerun-if-changed={}", shared.display());
    if !shared.is_dir() {
        println!("cargo::warning=../shared/fixtures not found: model tests that need it are skipped");
        return;
    }
    println!("cargo::rustc-cfg=mlf_shared");
    for name in GRAPH_FIXTURES {
        let dir = format!("../../shared/fixtures/mlf/{name}");
        let tar = format!("{dir}/model.tar");
        let path = if Path::new(&tar).exists() { tar } else { format!("{dir}/model") };
        build(&path);
    }
}
