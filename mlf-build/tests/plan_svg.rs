//! The plan picture of the digits model, as a golden file (`tests/snapshots/`): what it shows
//! changes only on purpose. Review a change with `cargo insta review` (or `INSTA_UPDATE=always`
//! and the diff of the snapshot). cargo-mlf's `plan_svg` test renders pictures to PNG.

#[test]
fn digits_plan_svg() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar");
    let desc = mlf_build::open(path).unwrap();
    let svg = mlf_build::__private::svg::plan_svg(&desc, "digits").unwrap();
    // Named boxes with tooltips in words, round ticks, the legend of what is drawn.
    for text in ["nn_contrib_dense_pack_add_nn_relu", "model output 0: nn_softmax", "150 B", "tensor (a colour each)"] {
        assert!(svg.contains(&format!(">\n{text}\n</text>")), "no text {text} in\n{svg}");
    }
    assert!(svg.contains("<title>model output 0, the output of operator tvmgen_default_fused_nn_softmax (float32 [1, 10]): 40 bytes at arena offset 0, live during call 2 (nn_softmax)</title>"), "{svg}");
    insta::assert_snapshot!(svg);
}
