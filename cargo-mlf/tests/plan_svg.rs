//! `cargo mlf plan MODEL --svg FILE` draws the static memory plan; the SVG must render to a PNG
//! (with resvg) without errors and with coloured boxes, and say in its text what a person reads:
//! tensor and operator names on the boxes, tooltips in words, round ticks, a legend of the
//! colours used. The KWS pictures are kept as `target/plan-kws.png` and `target/plan-kws-aot.png`.

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
    assert_eq!(size, (1100, 640));
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
    assert!(stdout.contains("arena 88192 bytes"), "{stdout}");
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let texts = texts(&svg);
    // Boxes named after the operator writing the tensor, scratch named as such, with sizes.
    for label in ["conv2d_add…_1", "scratch", "54.9 KiB", "15.6 KiB"] {
        assert!(texts.iter().any(|t| t == label), "no box labelled {label:?} in {texts:?}");
    }
    // Round ticks, a legend of what is drawn, the whole peak caption.
    for label in [
        "0 KiB",
        "20 KiB",
        "40 KiB",
        "60 KiB",
        "80 KiB",
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
    // The pool is one box named after the C's array, with its size; the legend has its colour.
    for label in ["global_workspace: USMP pool in the C", "54.9 KiB", "static RAM inside the C", "50 KiB"] {
        assert!(texts.iter().any(|t| t == label), "no text {label:?} in {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.contains("operator scratch")), "no scratch is drawn, so none in the legend");
    let tips = titles(&svg);
    assert!(
        tips.iter().any(|t| t.starts_with("USMP workspace pool global_workspace") && t.contains("56192 bytes")),
        "{tips:?}"
    );
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
