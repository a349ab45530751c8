//! Snapshot of the module generated for the digits graph model (the repository's copy), with
//! fixed parameter paths and symbol prefix so it is reproducible.

use std::path::Path;

#[test]
fn digits_graph_module() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar");
    let desc = mlf_build::open(&path).unwrap();
    let mlf_build::Executor::Graph(g) = &desc.executor else { panic!("a graph model") };
    let plan = mlf_build::__private::plan::graph::plan(&desc, g, 16).unwrap();
    let files: Vec<_> = desc.params.iter().map(|p| Some(format!("/OUT_DIR/params/{}.bin", p.name))).collect();
    let cg = mlf_build::__private::codegen::graph::GraphCodegen {
        symbol_prefix: "mlf_snapshot_",
        params: mlf_build::__private::codegen::graph::ParamCode::Embedded(&files),
    };
    let tokens = mlf_build::__private::codegen::graph::module_tokens(&desc, g, &plan, &cg).unwrap();
    let text = mlf_build::__private::codegen::pretty(&tokens, mlf_build::__private::codegen::graph::SAFETY).unwrap();
    insta::assert_snapshot!(text);
}
