//! Every Relax export of `fixtures/relax` whose kernels are C (TVM 0.27 `export_library`
//! output) reproduces its reference vectors through build.rs + `include_model!` (integers
//! exactly, floats within the case's tolerance), embedded and with external weights.

mod common;

use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax").join(name)
}

#[test]
fn float_mlps() {
    use model_tests::relax::*;
    assert_eq!(check_cases!(mlp_f32_c, fixture("mlp-f32-c"), [pixels], [output0]), 3);
    assert_eq!(check_cases!(mlp_f32_fused_c, fixture("mlp-f32-fused-c"), [pixels], [output0]), 3);
    assert_eq!(check_cases!(mlp_f32_fused_c_m4, fixture("mlp-f32-fused-c-m4"), [pixels], [output0]), 3);
}

#[test]
fn float_cnns() {
    use model_tests::relax::*;
    assert_eq!(check_cases!(cnn_f32_c, fixture("cnn-f32-c"), [image], [output0]), 3);
    assert_eq!(check_cases!(cnn_f32_fused_c, fixture("cnn-f32-fused-c"), [image], [output0]), 3);
    assert_eq!(check_cases!(onnx_cnn_c, fixture("onnx-cnn-c"), [input], [output0]), 3);
    assert_eq!(check_cases!(onnx_cnn_fused_c, fixture("onnx-cnn-fused-c"), [input], [output0]), 3);
}

#[test]
fn integer_cnns_with_three_outputs() {
    use model_tests::relax::*;
    let n = check_cases!(int8cnn_c, fixture("int8cnn-c"), [image], [output0, output1, output2]);
    assert_eq!(n, 3);
    let n = check_cases!(int8cnn_fused_c, fixture("int8cnn-fused-c"), [image], [output0, output1, output2]);
    assert_eq!(n, 3);
}

#[test]
fn two_inputs_and_an_output_that_is_a_view() {
    use model_tests::relax::*;
    assert_eq!(check_cases!(views_c, fixture("views-c"), [x, y], [output0, output1, output2]), 3);
    assert_eq!(check_cases!(views_fused_c, fixture("views-fused-c"), [x, y], [output0, output1, output2]), 3);
}

#[test]
fn module_surface() {
    use model_tests::relax::mlp_f32_c as m;
    // mlf's liveness plan: two 128-byte hidden tensors at most, then the logits and softmax.
    assert_eq!(m::ARENA_BYTES, 256);
    assert_eq!(m::TVM_PLAN_BYTES, 128 + 128 + 48);
    let net = common::wait_take(m::Model::take);
    assert!(m::Model::take().is_none(), "take() is exclusive");
    drop(net);
}
