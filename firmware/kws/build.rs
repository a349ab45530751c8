//! Builds the three KWS archives and the digits AOT archive of ../shared/fixtures (one program
//! each) and writes, per
//! program, the `include_model!` line and the reference vectors into `OUT_DIR/<module>.rs`.
//! An absent fixture makes only its program fail to compile, naming it.

/// (fixture folder, module name).
const MODELS: [(&str, &str); 4] = [
    ("mlf/kws-int8-graph", "kws_graph"),
    ("mlf/kws-int8-aot-c", "kws_aot"),
    ("mlf/kws-int8-aot-usmp", "kws_usmp"),
    ("mlf/digits-mlp-aot-c", "digits_aot"),
];

fn main() {
    for (rel, name) in MODELS {
        let file = format!("{name}.rs");
        match device_vectors::fixture(rel) {
            Ok(dir) => {
                let model = dir.join("model.tar").canonicalize().expect("model.tar");
                mlf_build::Model::open(&model).name(name).compile().unwrap_or_else(|e| panic!("{e}"));
                device_vectors::Program::new(&model, name).cases(&dir, usize::MAX).graph_facts(&model).write(&file);
            }
            Err(why) => device_vectors::missing(&file, &why),
        }
    }
}
