//! Every MLF fixture in ../shared/fixtures/mlf is read, and its inputs (name, dtype, shape) and
//! outputs (dtype, shape, order) equal its vectors/manifest.json.

use mlf_fixtures::{Manifest, fixtures_or_skip, mlf_fixtures};

#[test]
fn every_mlf_fixture_matches_its_manifest() {
    let Some(root) = fixtures_or_skip("every_mlf_fixture_matches_its_manifest") else { return };
    let fixtures = mlf_fixtures(&root);
    assert!(!fixtures.is_empty(), "no MLF fixtures found under {}", root.display());
    let mut checked = 0;
    for fx in fixtures {
        let desc = match mlf_build::open(&fx.model) {
            Ok(d) => d,
            Err(e) => panic!("{}: {e}", fx.name),
        };
        let Some(manifest) = Manifest::read(&fx.dir) else {
            eprintln!("{}: no manifest; read OK", fx.name);
            continue;
        };
        let case = &manifest.cases[0];
        assert_eq!(desc.inputs.len(), case.inputs.len(), "{}: input count", fx.name);
        for (got, want) in desc.inputs.iter().zip(&case.inputs) {
            assert_eq!(Some(&got.name), want.name.as_ref(), "{}: input name", fx.name);
            assert_eq!(got.dtype.to_string(), want.dtype, "{}: input {} dtype", fx.name, got.name);
            assert_eq!(got.shape, want.shape, "{}: input {} shape", fx.name, got.name);
        }
        assert_eq!(desc.outputs.len(), case.outputs.len(), "{}: output count", fx.name);
        for (i, (got, want)) in desc.outputs.iter().zip(&case.outputs).enumerate() {
            assert_eq!(want.index, Some(i), "{}: manifest output order", fx.name);
            assert_eq!(got.dtype.to_string(), want.dtype, "{}: output {i} dtype", fx.name);
            assert_eq!(got.shape, want.shape, "{}: output {i} shape", fx.name);
        }
        checked += 1;
    }
    eprintln!("checked {checked} MLF fixtures against their manifests");
}

/// The check of kernel stores against graph entries (read/mlf/extents.rs) refuses no graph
/// archive of the workspace or fixture, and bounds stores in every one whose C it reads: printed per fixture as kernels,
/// stores bounded and stores skipped.
#[test]
fn kernel_stores_fit_every_graph_fixture() {
    use mlf_build::Executor;
    let ws = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    // The workspace's own graph archives (every module of the two-module one), then the fixtures.
    let mut models: Vec<(String, std::path::PathBuf, Option<&str>)> = ["digits-graph-linked", "multi-io-graph"]
        .iter()
        .map(|n| (format!("tests/models/{n}"), ws.join(format!("mlf-build/tests/models/{n}.tar")), None))
        .collect();
    models.push(("examples/digits".into(), ws.join("examples/digits/model/digits.tar"), None));
    for m in ["default", "other"] {
        models.push((format!("two-modules ({m})"), ws.join("model-tests/models/two-modules.tar"), Some(m)));
    }
    if let Some(root) = fixtures_or_skip("kernel_stores_fit_every_graph_fixture") {
        models.extend(mlf_fixtures(&root).into_iter().map(|fx| (fx.name, fx.model, None)));
    }
    let mut graphs = 0;
    for (name, path, module) in models {
        let opts = mlf_build::ReadOptions { module: module.map(str::to_string) };
        let desc = mlf_build::open_with(&path, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Executor::Graph(g) = &desc.executor else { continue };
        let counts = mlf_build::__private::read::mlf::kernel_stores_fit(&g.graph, &desc.code.sources, "graph")
            .unwrap_or_else(|e| panic!("{}: {e}", name));
        eprintln!(
            "{}: {} kernels, {} stores bounded, {} skipped; {} call arguments compared, {} written to their last byte",
            name, counts.kernels, counts.bounded, counts.skipped, counts.compared, counts.filled
        );
        if !desc.code.sources.is_empty() {
            assert!(counts.bounded > 0, "{}: no store bounded", name);
        }
        graphs += 1;
    }
    assert!(graphs > 0);
}
