//! Builds ResNet-8 (graph executor) and KWS (AOT, C interface) of ../shared/fixtures for the
//! shared arena `models` (with the `apart` feature: each on an arena of its own) and writes, per
//! program, the models' `include_model!` lines, their reference vectors and the arena's
//! declaration into `OUT_DIR/<program>.rs`: `two.rs` (ResNet-8 and KWS) and `three.rs` (and the
//! iris kmodel, which needs no build step). An absent fixture makes the programs fail to
//! compile, naming it. `psram.rs` is `two.rs` with the shared arena in the link section
//! `.psram`, which the device's `memory.x` places in its second RAM region. `kws-psram.rs`: KWS
//! (graph executor) alone, on an arena of its own that build.rs places in `.psram`
//! (`.arena_section(".psram")`; not built with `apart`).

/// (fixture folder, model file, module name, built by this script).
const MODELS: [(&str, &str, &str, bool); 3] = [
    ("mlf/resnet8-int8-graph", "model.tar", "resnet", true),
    ("mlf/kws-int8-aot-c", "model.tar", "kws", true),
    ("kmodel/v4-iris", "iris.kmodel", "iris", false),
];

fn main() {
    let apart = std::env::var_os("CARGO_FEATURE_APART").is_some();
    if !apart {
        arena_in_a_section();
    }
    let mut models = Vec::new();
    for (rel, file, name, build) in MODELS {
        match device_vectors::fixture(rel) {
            Ok(dir) => {
                let model = dir.join(file).canonicalize().expect("the model file");
                if build {
                    let m = mlf_build::Model::open(&model).name(name);
                    let m = if apart { m } else { m.shared_arena("models") };
                    m.compile().unwrap_or_else(|e| panic!("{e}"));
                }
                models.push((dir, model, name));
            }
            Err(why) => {
                for out in ["two.rs", "three.rs"] {
                    device_vectors::missing(out, &why);
                }
                return;
            }
        }
    }
    // The `include_model!` line and vectors of the first `n` models.
    let programs = |n: usize| -> Vec<device_vectors::Program> {
        models[..n]
            .iter()
            .map(|(dir, model, name)| {
                let p = device_vectors::Program::new(model, name);
                let p = if apart { p.prefixed(name) } else { p.arena("models", name) };
                p.cases(dir, usize::MAX)
            })
            .collect()
    };
    device_vectors::write_all("two.rs", programs(2), &arena(apart, &["resnet", "kws"], ""));
    device_vectors::write_all("three.rs", programs(3), &arena(apart, &["resnet", "kws", "iris"], ""));
    // The two TVM models' shared arena in the second RAM region (the section `.psram`).
    device_vectors::write_all("psram.rs", programs(2), &arena(apart, &["resnet", "kws"], " in \".psram\""));
}

/// KWS (graph executor) on an arena of its own, the arena in the link section `.psram`:
/// `kws-psram.rs` (its `include_model!` says the section too, which the macro checks).
fn arena_in_a_section() {
    let out = "kws-psram.rs";
    match device_vectors::fixture("mlf/kws-int8-graph") {
        Ok(dir) => {
            let model = dir.join("model.tar").canonicalize().expect("model.tar");
            let m = mlf_build::Model::open(&model).name("kws_graph").arena_section(".psram");
            m.compile().unwrap_or_else(|e| panic!("{e}"));
            let p = device_vectors::Program::new(&model, "kws_graph").option("arena_section", ".psram");
            p.cases(&dir, usize::MAX).write(out);
        }
        Err(why) => device_vectors::missing(out, &why),
    }
}

/// The arena the models are on: `shared_arena!(models: …)`, or nothing (arenas of their own);
/// and `ARENA_PARTS`, each model's bytes of arena, and `ARENA_TOTAL`, the arenas' bytes.
/// `place`: ` in ".section"` to put the shared arena in a link section, or empty.
fn arena(apart: bool, names: &[&str], place: &str) -> String {
    if apart {
        let parts: Vec<String> = names.iter().map(|n| format!("(\"{n}\", {n}::ARENA_BYTES)")).collect();
        let sum: Vec<String> = names.iter().map(|n| format!("{n}::ARENA_BYTES")).collect();
        format!(
            "/// Each model's arena.\nconst ARENA_PARTS: &[(&str, usize)] = &[{}];\n\
             /// The arenas' bytes: their sum.\nconst ARENA_TOTAL: usize = {};\n",
            parts.join(", "),
            sum.join(" + ")
        )
    } else {
        format!(
            "mlf_runtime::shared_arena!(pub models: {}{place});\n\
             /// Each model's part of the shared arena.\nconst ARENA_PARTS: &[(&str, usize)] = models::PARTS;\n\
             /// The arena's bytes: the largest part.\nconst ARENA_TOTAL: usize = models::BYTES;\n",
            names.join(", ")
        )
    }
}
