//! The iris kmodels (V3 and V4) through `include_model!`: the published output.

#[allow(dead_code)]
mod common;

#[cfg(mlf_shared)]
mod models {
    mlf_runtime::include_model!("../../shared/fixtures/kmodel/v3-iris/iris.kmodel", name = iris_v3);
    mlf_runtime::include_model!("../../shared/fixtures/kmodel/v4-iris/iris.kmodel", name = iris_v4);
}

#[cfg(mlf_shared)]
const FEATURES: [f32; 4] = [5.1, 3.8, 1.9, 0.4];

#[test]
#[cfg(mlf_shared)]
fn iris_v3_prints_the_published_digits() {
    use models::iris_v3 as m;
    assert_eq!(m::INPUT_SHAPE, [1, 4]);
    assert_eq!(m::OUTPUT_SHAPE, [1, 3]);
    let mut model = m::Model::take().expect("first take");
    assert!(m::Model::take().is_none(), "a second instance while the first is alive");
    let (out, stack) = common::stack_used(|| model.run(&m::Inputs { input: &FEATURES }));
    common::within_stack(stack, m::STACK_BYTES, file!());
    let out = out.expect("run");
    let printed: Vec<String> = out.output.iter().map(|v| format!("{v:.6}")).collect();
    assert_eq!(printed, ["16.077795", "5.607656", "-2.071745"]);
    let want = mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v3-iris/expected_output_f32le.bin");
    let want: Vec<u8> = std::fs::read(want).unwrap();
    let got: Vec<u8> = out.output.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(got, want);
    drop(model);
    assert!(m::Model::take().is_some(), "take after drop");
}

#[test]
#[cfg(mlf_shared)]
fn iris_v4_matches_within_1e6() {
    use models::iris_v4 as m;
    assert_eq!(m::INPUT_SHAPE, [1, 1, 1, 4]);
    let mut model = m::Model::take().expect("take");
    let (out, stack) = common::stack_used(|| model.run(&m::Inputs { input: &FEATURES }));
    common::within_stack(stack, m::STACK_BYTES, file!());
    let out = out.expect("run");
    let want_file = mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v4-iris/expected_output_f32le.bin");
    let want_f = mlf_fixtures::load::<f32, 3>(&want_file);
    for (g, w) in out.output.iter().zip(want_f.iter()) {
        assert!((g - w).abs() <= 1e-6 * w.abs(), "{g} vs {w}");
    }
    let want = std::fs::read(&want_file).unwrap();
    // The fixture's manifest and comparison rule (rtol/atol 1e-6) agree.
    let dir = mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v4-iris");
    let manifest = mlf_fixtures::Manifest::read(&dir).expect("manifest");
    let case = &manifest.cases[0];
    assert_eq!(case.outputs[0].size, Some(3));
    let got: Vec<u8> = out.output.iter().flat_map(|v| v.to_le_bytes()).collect();
    mlf_fixtures::compare("float32", &got, &want, case).unwrap();
    // A second run reuses the plan and gives the same result.
    let first = *out.output;
    let again = *model.run(&m::Inputs { input: &FEATURES }).expect("run").output;
    assert_eq!(again.map(f32::to_bits), first.map(f32::to_bits));
}

#[test]
#[cfg(not(mlf_shared))]
fn iris_skipped() {
    eprintln!("SKIP kmodel iris tests: ../shared/fixtures is not present");
}
