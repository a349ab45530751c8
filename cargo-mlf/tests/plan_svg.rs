//! `cargo mlf plan MODEL --svg FILE` draws the static memory plan; the SVG must render to a PNG
//! (with resvg) without errors and with coloured boxes, and say in its text what a person reads:
//! every operator call named under the axis, names on the boxes (whole, never cut), parameters
//! by their names, tooltips in words, round ticks, a legend of the colours used, the USMP pool's
//! contents as the C places them, and (`cargo mlf build --plan-svg`, which compiles the C) the
//! stack to scale. The pictures are kept as `target/plan-kws.png`, `target/plan-kws-aot.png` and
//! `target/plan-digits-stack.png`.

use std::path::Path;
use std::process::Command;

/// Runs `cargo mlf plan` on `model`, renders the SVG and writes `png`; returns the command's
/// stdout and the picture's size.
fn plan_to_png(model: &Path, svg: &Path, png: &Path) -> (String, (u32, u32)) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "plan"])
        .arg(model)
        .arg("--svg")
        .arg(svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(svg).unwrap();
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(&text, &opt)
        .unwrap_or_else(|e| panic!("{}: the SVG does not parse: {e}", svg.display()));
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a non-empty picture");
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(png).unwrap();
    // Something was drawn beyond the white background: coloured boxes.
    let coloured = pixmap.pixels().iter().filter(|p| !(p.red() == p.green() && p.green() == p.blue())).count();
    assert!(coloured > 1000, "{}: only {coloured} coloured pixels", png.display());
    (String::from_utf8_lossy(&out.stdout).into_owned(), (size.width(), size.height()))
}

#[test]
fn digits_plan_renders() {
    let root = mlf_fixtures::workspace_root();
    let (stdout, size) = plan_to_png(
        &root.join("examples/digits/model/digits.tar"),
        &root.join("target/plan-digits.svg"),
        &root.join("target/plan-digits.png"),
    );
    assert!(stdout.contains("arena 176 bytes"), "{stdout}");
    assert!(stdout.contains("parameters in flash: 9640 bytes"), "{stdout}");
    assert_eq!(size, (1400, 880));
    let svg = std::fs::read_to_string(root.join("target/plan-digits.svg")).unwrap();
    assert!(svg.contains("peak: ") && svg.contains("arena: 176 bytes"), "the peak and the arena are marked");
}

#[test]
fn kws_graph_plan_renders_to_png() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("kws_graph_plan_renders_to_png") else { return };
    let root = mlf_fixtures::workspace_root();
    let png = root.join("target/plan-kws.png");
    let svg_path = root.join("target/plan-kws.svg");
    let (stdout, _) = plan_to_png(&fx.join("mlf/kws-int8-graph/model.tar"), &svg_path, &png);
    assert!(stdout.contains("arena 72192 bytes"), "{stdout}"); // the peak of tensors live at once stays 88192
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let texts = texts(&svg);
    // Boxes named whole, or by what they are and the call that writes them; with sizes.
    for label in ["output of call 2", "scratch,", "call 2", "54.9 KiB", "15.6 KiB"] {
        assert!(texts.iter().any(|t| t == label), "no box labelled {label:?} in {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.contains('…')), "no name is cut: {texts:?}");
    // Every call named under the axis (long names on two lines), and on hover.
    for label in ["0: cast_subtract", "10: nn_avg_pool2d_cast", "13: nn_softmax_divide_round_add_clip_cast"] {
        assert!(texts.iter().any(|t| t == label), "no axis name {label:?} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t.starts_with("2: nn_conv2d_add_")), "the long name of call 2, broken: {texts:?}");
    // Round ticks (to the 72,192-byte in-place arena), a legend of what is drawn, the whole peak
    // caption (the tensors live at once, counted whole).
    for label in [
        "0 KiB",
        "20 KiB",
        "40 KiB",
        "60 KiB",
        "tensor (a colour each)",
        "operator scratch (TVMBackendAllocWorkspace)",
        "peak: 88192 bytes live at call 2 (nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract_1)",
    ] {
        assert!(texts.iter().any(|t| t == label), "no text {label:?} in {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.contains("21.5") || t.contains("43.1")), "ticks are round: {texts:?}");
    // Tooltips in words.
    let tips = titles(&svg);
    assert!(tips.iter().all(|t| !t.contains("entries [") && !t.contains("storage {")), "{tips:?}");
    assert!(
        tips.iter().any(|t| t.starts_with("scratch memory of operator tvmgen_default_fused_nn_conv2d_")
            && t.contains(" bytes at arena offset ")
            && t.contains("live during call 2 (nn_conv2d_")),
        "{tips:?}"
    );
    assert!(
        tips.iter()
            .any(|t| t.starts_with("output of operator tvmgen_default_fused_") && t.contains("(int16 [1, 25, 5, 64])")),
        "{tips:?}"
    );
    assert!(tips.iter().any(|t| t.starts_with("model output 0, the output of operator")), "{tips:?}");
    assert!(tips.iter().any(|t| t == "call 2: tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract_1"), "{tips:?}");
    // Parameters by their names, with dtype, shape and the operator that reads them.
    assert!(
        tips.iter().any(|t| t.starts_with("p1: int16 [10, 4, 1, 64], read by nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract: ")),
        "{tips:?}"
    );
    assert!(texts.iter().any(|t| t.starts_with("p43: int16 [1, 1, 64, 64], read by ")), "{texts:?}");
    eprintln!("wrote {}", png.display());
}

#[test]
fn aot_usmp_plan_renders() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("aot_usmp_plan_renders") else { return };
    let root = mlf_fixtures::workspace_root();
    let svg_path = root.join("target/plan-kws-aot.svg");
    let (stdout, _) =
        plan_to_png(&fx.join("mlf/kws-int8-aot-usmp/model.tar"), &svg_path, &root.join("target/plan-kws-aot.png"));
    assert!(stdout.contains("USMP pool inside the C: 56192 bytes"), "{stdout}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let texts = texts(&svg);
    // The pool is a box named after the C's array, with its size, and its contents as the C
    // places them, over the main's calls; the legend has their colours.
    for label in [
        "global_workspace: USMP pool in the C",
        "54.9 KiB",
        "static RAM inside the C",
        "where the C puts a tensor in it (its start)",
        "50 KiB",
        "0: cast_subtract",
        "sid_3",
        "sid_10",
    ] {
        assert!(texts.iter().any(|t| t == label), "no text {label:?} in {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.contains("operator scratch")), "no scratch is drawn, so none in the legend");
    let tips = titles(&svg);
    assert!(
        tips.iter().any(|t| t.starts_with("USMP workspace pool global_workspace") && t.contains("56192 bytes")),
        "{tips:?}"
    );
    assert!(
        tips.iter().any(|t| t.starts_with("intermediate sid_3 of the main at offset 32000 of the USMP pool global_workspace: passed first to call 2 (nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract_1), last to call 3")),
        "{tips:?}"
    );
    assert!(
        tips.iter().any(|t| t.starts_with("scratch pad_temp of call 1 (nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract) at offset 16000")),
        "{tips:?}"
    );
}

/// `cargo mlf build --plan-svg` compiles the model's C, so its picture has the stack one run
/// needs, to scale with its figure and each part named, beside the arena.
#[test]
fn a_built_plan_shows_the_stack() {
    let root = mlf_fixtures::workspace_root();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("stacked");
    let new = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "new", "--vcs", "none", "--mlf-path"])
        .arg(&root)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(new.status.success(), "{}", String::from_utf8_lossy(&new.stderr));
    let plans = tmp.path().join("plans");
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "build", "--check-only", "--plan-svg"])
        .arg(&plans)
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/mlf-new-tests"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg_text = std::fs::read_to_string(plans.join("stacked-stacked.svg")).unwrap();
    let png = root.join("target/plan-digits-stack.png");
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(&svg_text, &opt).unwrap();
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(&png).unwrap();
    let texts = texts(&svg_text);
    assert!(texts.iter().any(|t| t.starts_with("stack: ") && t.ends_with(" bytes")), "{texts:?}");
    // The dev profile (no --release): mlf's frames unoptimised, as STACK_BYTES counts them.
    for label in ["to scale: the bar is the whole figure", "leaf 256 B", "mlf 3072 B"] {
        assert!(texts.iter().any(|t| t == label), "no text {label:?} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t.starts_with("C frames ") && t.ends_with(" B")), "{texts:?}");
    eprintln!("wrote {}", png.display());
}

/// The contents of every `<text>` element.
fn texts(svg: &str) -> Vec<String> {
    elements(svg, "<text", "</text>")
}

/// The contents of every `<title>` element (the tooltips).
fn titles(svg: &str) -> Vec<String> {
    elements(svg, "<title", "</title>")
}

fn elements(svg: &str, open: &str, close: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find(open) {
        let after = &rest[start..];
        let (Some(gt), Some(end)) = (after.find('>'), after.find(close)) else { break };
        out.push(after[gt + 1..end].trim().replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"));
        rest = &after[end + close.len()..];
    }
    out
}
