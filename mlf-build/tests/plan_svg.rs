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

/// The profile picture: the digits plan with one bar per operator under the plan's column of
/// the same call (figures as the Cortex-M4F measures them), the dominant one named; without a
/// plan (a kmodel) the bars stand alone. And what the plan says of each operator.
#[test]
fn digits_profile_svg() {
    use mlf_build::__private::svg::{ProfileBar, picture, profile_svg};
    let desc = digits();
    let ops = ["nn_contrib_dense_pack_add_nn_relu", "nn_contrib_dense_pack_add", "nn_softmax"];
    let figures = [16_760u64, 2_880, 920];
    let bars: Vec<ProfileBar> = ops
        .iter()
        .zip(figures)
        .map(|(n, f)| ProfileBar { name: format!("tvmgen_default_fused_{n}"), figure: f, share: f as f64 / 21_040.0 })
        .collect();
    let plan = picture(&desc, "digits").unwrap();
    let svg =
        profile_svg(Some(&plan), &bars, "instructions", "digits on thumbv7em-none-eabihf, run 21,040 instructions");
    assert!(svg.contains("viewBox=\"0 0 1400 1180\""), "the plan and a strip of bars under it");
    assert!(svg.contains("peak: "), "the plan is drawn whole");
    for text in ["79.7%", "13.7%", "4.4%", "0: nn_contrib_dense_pack_add_nn_relu", "2: nn_softmax"] {
        assert!(svg.contains(&format!(">\n{text}\n</text>")), "no text {text} in\n{svg}");
    }
    assert!(svg.contains("<title>operator 1: tvmgen_default_fused_nn_contrib_dense_pack_add: 2,880 instructions, 13.7% of the run</title>"), "{svg}");
    assert!(
        svg.contains("dominant: operator 0, tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu (79.7% of the run)")
    );
    assert!(svg.contains("under the plan's column of the same call"), "{svg}");
    insta::assert_snapshot!(svg);
    let alone = profile_svg(None, &bars, "instructions", "a kmodel");
    assert!(alone.contains("viewBox=\"0 0 1400 360\"") && !alone.contains("peak: "), "{alone}");
    // Each call's arena window (its tensors and scratch as placed) and parameter bytes.
    let mem = mlf_build::__private::operator_memory(&desc).unwrap();
    let names: Vec<&str> = mem.iter().map(|m| m.name.trim_start_matches("tvmgen_default_fused_")).collect();
    assert_eq!(names, ops);
    assert_eq!(mem.iter().map(|m| m.param_bytes).collect::<Vec<_>>(), [8320, 1320, 0]);
    assert!(mem.iter().all(|m| m.window.is_some_and(|(a, b)| a < b && b <= 176 && m.arena_bytes <= b - a)), "{mem:?}");
}
