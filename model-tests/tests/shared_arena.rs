//! Two models of different executors (AOT, graph) on one shared arena, taken in turn: the arena
//! is the larger of the two parts, and each reproduces its reference vectors although the other
//! wrote the same bytes in between.

#[cfg(mlf_shared)]
#[test]
fn aot_and_graph_models_take_turns_on_one_arena() {
    use model_tests::shared::{digits_aot, multi_io, one_arena};
    use std::path::PathBuf;

    assert_eq!(one_arena::BYTES, digits_aot::ARENA_BYTES.max(multi_io::ARENA_BYTES));
    assert_eq!(one_arena::PARTS, &[("digits_aot", digits_aot::ARENA_BYTES), ("multi_io", multi_io::ARENA_BYTES)]);
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/mlf");
    let (d_dir, m_dir) = (fixtures.join("digits-mlp-aot-c"), fixtures.join("multi-io-graph"));
    let (d, m) = (mlf_fixtures::Manifest::read(&d_dir).unwrap(), mlf_fixtures::Manifest::read(&m_dir).unwrap());
    let file = |dir: &PathBuf, f: &Option<String>| dir.join("vectors").join(f.as_ref().unwrap());
    let mut arena = one_arena::Arena::take().expect("the arena's handle");
    let mut runs = 0;
    for (dc, mc) in d.cases.iter().zip(m.cases.iter().cycle()) {
        {
            let mut net = digits_aot::Model::take(&mut arena).expect("digits");
            let pixels = mlf_fixtures::load(&file(&d_dir, &dc.inputs[0].file));
            let out = net.run(&digits_aot::Inputs { pixels: &pixels }).unwrap();
            let want = std::fs::read(file(&d_dir, &dc.outputs[0].file)).unwrap();
            mlf_fixtures::compare(&dc.outputs[0].dtype, mlf_runtime::as_bytes(&out.output[..]), &want, dc).unwrap();
        }
        {
            let mut net = multi_io::Model::take(&mut arena).expect("multi-io");
            let a = mlf_fixtures::load(&file(&m_dir, &mc.inputs[0].file));
            let b = mlf_fixtures::load(&file(&m_dir, &mc.inputs[1].file));
            let out = net.run(&multi_io::Inputs { audio: &a, gain: &b }).unwrap();
            let want0 = std::fs::read(file(&m_dir, &mc.outputs[0].file)).unwrap();
            mlf_fixtures::compare(&mc.outputs[0].dtype, mlf_runtime::as_bytes(&out.output0[..]), &want0, mc).unwrap();
            let want1 = std::fs::read(file(&m_dir, &mc.outputs[1].file)).unwrap();
            mlf_fixtures::compare(&mc.outputs[1].dtype, mlf_runtime::as_bytes(&out.output1[..]), &want1, mc).unwrap();
        }
        runs += 1;
    }
    assert!(runs >= 2, "{runs} turns");
}
