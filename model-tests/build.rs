//! Builds the models under test. The repository's own digits model always; the fixtures in
//! ../shared/fixtures when present (and then sets `cfg(mlf_shared)` so the tests that use them
//! compile).

use std::path::Path;

/// Fixtures run end to end (folder names under fixtures/mlf): graph, then AOT.
const FIXTURES: &[&str] = &[
    "arduino-demos-kws-yesno-graph-v4",
    "digits-mlp-graph",
    "digits-mlp-graph-linked",
    "guberti-tvm-graph-v2-cifar-lp0-syslib",
    "gvsoc-sine-graph-v7",
    "kws-int8-graph",
    "multi-io-graph",
    "resnet8-int8-graph",
    "digits-mlp-aot-c",
    "digits-mlp-aot-packed",
    "digits-mlp-aot-usmp",
    "esp32-cifar-aot-v7-usmp",
    "kws-int8-aot-c",
    "kws-int8-aot-usmp",
    "sine-aot-v5-c-iface",
];

/// Fixtures also built with external parameters: (folder, name, placements).
const EXTERNAL: &[(&str, &str, &[&str])] = &[
    ("kws-int8-graph", "kws_graph", &["resident", "streamed", "lazy"]),
    ("resnet8-int8-graph", "resnet8", &["resident", "streamed", "lazy"]),
    ("multi-io-graph", "multi_io", &["resident", "streamed", "lazy"]),
    ("guberti-tvm-graph-v2-cifar-lp0-syslib", "cifar_v2", &["resident", "streamed", "lazy"]),
    ("digits-mlp-graph", "digits_graph", &["resident", "streamed", "lazy"]),
    ("digits-mlp-aot-usmp", "digits_aot_usmp", &["resident", "streamed", "lazy"]),
    ("digits-mlp-aot-packed", "digits_aot_packed", &["resident", "streamed", "lazy"]),
    ("kws-int8-aot-usmp", "kws_aot_usmp", &["resident", "streamed", "lazy"]),
    ("esp32-cifar-aot-v7-usmp", "cifar_esp32", &["resident", "streamed", "lazy"]),
    ("digits-mlp-aot-c", "digits_aot_c", &["resident", "streamed", "lazy"]),
    ("kws-int8-aot-c", "kws_aot_c", &["resident", "streamed", "lazy"]),
    ("sine-aot-v5-c-iface", "sine_aot_v5", &["resident", "streamed", "lazy"]),
    ("digits-mlp-graph-linked", "digits_graph_linked", &["resident", "streamed", "lazy"]),
    ("gvsoc-sine-graph-v7", "sine_graph_v7", &["resident", "streamed", "lazy"]),
    ("arduino-demos-kws-yesno-graph-v4", "yesno_v4", &["resident", "streamed", "lazy"]),
];

/// The Relax exports (fixtures/relax) whose kernels are C, so they run on the host.
const RELAX: &[&str] = &[
    "cnn-f32-c",
    "cnn-f32-fused-c",
    "int8cnn-c",
    "int8cnn-fused-c",
    "mlp-f32-c",
    "mlp-f32-fused-c",
    "mlp-f32-fused-c-m4",
    "onnx-cnn-c",
    "onnx-cnn-fused-c",
    "views-c",
    "views-fused-c",
];

fn build(path: &str) {
    mlf_build::Model::open(path).compile_or_exit();
}

/// Builds `path` with external parameters, writing the split folder to `OUT_DIR/split/<name>`.
fn build_external(path: &str, name: &str, placement: &str) {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("split").join(name);
    let placement: mlf_build::Placement = placement.parse().unwrap();
    mlf_build::Model::open(path).params(placement).split_dir(out).compile_or_exit();
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(mlf_shared)");
    // A sanitizer (the README's AddressSanitizer command) grows every frame: the tests then do
    // not hold runs to the stack figure the modules state for uninstrumented code.
    println!("cargo::rustc-check-cfg=cfg(mlf_sanitizer)");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("sanitizer=")) {
        println!("cargo::rustc-cfg=mlf_sanitizer");
    }
    build("../examples/digits/model/digits.tar");
    for placement in ["resident", "streamed", "lazy"] {
        build_external("../examples/digits/model/digits.tar", "digits", placement);
    }
    for module in ["default", "other"] {
        mlf_build::Model::open("models/two-modules.tar").module(module).compile_or_exit();
    }
    // Two executors on one shared arena (copies of the digits fixtures kept in mlf-build).
    for model in ["../mlf-build/tests/models/digits-aot-c.tar", "../mlf-build/tests/models/multi-io-graph.tar"] {
        mlf_build::Model::open(model).shared_arena("one_arena").compile_or_exit();
    }
    for name in RELAX {
        build(&format!("../fixtures/relax/{name}/model.tar"));
    }
    for placement in ["resident", "streamed", "lazy"] {
        build_external("../fixtures/relax/cnn-f32-fused-c/model.tar", "relax_cnn", placement);
    }
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    println!("cargo::rerun-if-changed={}", shared.display());
    if !shared.is_dir() {
        println!("cargo::warning=../shared/fixtures not found: model tests that need it are skipped");
        return;
    }
    println!("cargo::rustc-cfg=mlf_shared");
    for name in FIXTURES {
        let dir = format!("../../shared/fixtures/mlf/{name}");
        let tar = format!("{dir}/model.tar");
        let path = if Path::new(&tar).exists() { tar } else { format!("{dir}/model") };
        build(&path);
        if let Some((_, split, placements)) = EXTERNAL.iter().find(|(f, ..)| f == name) {
            for p in *placements {
                build_external(&path, split, p);
            }
        }
    }
}
