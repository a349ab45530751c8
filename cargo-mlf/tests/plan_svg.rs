//! `cargo mlf plan MODEL --svg FILE` draws the static memory plan; the SVG must render to a PNG
//! (with resvg) without errors. The KWS graph fixture's picture is kept as `target/plan-kws.png`.

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
    let (stdout, _) = plan_to_png(&fx.join("mlf/kws-int8-graph/model.tar"), &root.join("target/plan-kws.svg"), &png);
    assert!(stdout.contains("arena 88192 bytes"), "{stdout}");
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
    eprintln!("wrote {}", png.display());
}

#[test]
fn aot_usmp_plan_renders() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("aot_usmp_plan_renders") else { return };
    let root = mlf_fixtures::workspace_root();
    let (stdout, _) = plan_to_png(
        &fx.join("mlf/kws-int8-aot-usmp/model.tar"),
        &root.join("target/plan-kws-aot.svg"),
        &root.join("target/plan-kws-aot.png"),
    );
    assert!(stdout.contains("USMP pool inside the C: 56192 bytes"), "{stdout}");
}
