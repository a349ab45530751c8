//! The plan picture of the digits model, as golden files (`tests/snapshots/`): what it shows
//! changes only on purpose. Review a change with `cargo insta review` (or `INSTA_UPDATE=always`
//! and the diff of the snapshot). cargo-mlf's `plan_svg` test renders pictures to PNG.

fn digits() -> mlf_build::ModelDesc {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar");
    mlf_build::open(path).unwrap()
}

#[test]
fn digits_plan_svg() {
    let svg = mlf_build::__private::svg::plan_svg(&digits(), "digits").unwrap();
    // Named boxes with tooltips in words, every call named under the axis, round ticks, the
    // legend of what is drawn, the parameters by their names.
    for text in [
        "nn_contrib_dense_pack_add_nn_relu",
        "model output 0: nn_softmax",
        "0: nn_contrib_dense_pack_add_nn_relu",
        "2: nn_softmax",
        "150 B",
        "tensor (a colour each)",
    ] {
        assert!(svg.contains(&format!(">\n{text}\n</text>")), "no text {text} in\n{svg}");
    }
    assert!(svg.contains("<title>model output 0, the output of operator tvmgen_default_fused_nn_softmax (float32 [1, 10]): 40 bytes at arena offset 0, live during call 2 (nn_softmax)</title>"), "{svg}");
    assert!(svg.contains("<title>p0: float32 [4, 64, 8], read by nn_contrib_dense_pack_add_nn_relu: 8192 bytes (parameters in flash)</title>"), "{svg}");
    assert!(!svg.contains('…'), "no name is cut: {svg}");
    insta::assert_snapshot!(svg);
}

/// The same picture once the C is compiled: the stack one run needs stands beside the arena on
/// a scale of its own, each part named with its bytes (a fixed figure: the compiler's frames
/// differ between machines).
#[test]
fn digits_plan_svg_with_stack() {
    let figure = mlf_build::__private::StackFigure {
        total: 3432,
        runtime: 3072,
        c: 104,
        leaf: 256,
        deepest: "tvmgen_default_run (8) → tvmgen_default___tvm_main__ (48) → tvmgen_default_fused_nn_softmax (48)"
            .into(),
        bounded: true,
        debug: true,
        ..Default::default()
    };
    let picture = mlf_build::__private::svg::picture(&digits(), "digits").unwrap().with_stack(Some(figure));
    let svg = picture.to_svg();
    for text in
        ["stack: 3432 bytes", "to scale: the bar is the whole figure", "C frames 104 B", "leaf 256 B", "mlf 3072 B"]
    {
        assert!(svg.contains(&format!(">\n{text}\n</text>")), "no text {text} in\n{svg}");
    }
    assert!(
        svg.contains(
            "stack, mlf: 3072 bytes (mlf's own frames (run(), the runtime), with debug assertions (dev profile))"
        ),
        "{svg}"
    );
    insta::assert_snapshot!(svg);
}
