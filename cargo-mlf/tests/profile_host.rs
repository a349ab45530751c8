//! `cargo mlf run --profile` on this computer (no `--target`): the digits model's outputs as
//! without it, one row per graph call with its mean nanoseconds, share, arena window and
//! parameter bytes, the hook's stated cost, as a table, as JSON and as a picture beside the
//! memory plan that renders (resvg) to `target/profile-digits.png`.

use mlf_fixtures::Manifest;

mod common;

#[test]
fn digits_profile_on_the_host_has_a_table_json_and_a_picture() {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    let model = dir.join("digits.tar");
    let work = common::work_dir();
    let (json, svg) = (work.join("digits-host-profile.json"), work.join("digits-host-profile.svg"));
    let manifest = Manifest::read(&dir).unwrap();
    let out = work.join("out-host-profile");
    let o = common::run_command(&model, &dir, &manifest.cases[0], &out, &work)
        .arg("--profile")
        .arg("--profile-json")
        .arg(&json)
        .arg("--profile-svg")
        .arg(&svg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // The outputs are the model's.
    let got = std::fs::read(common::output_file(&stderr, 0)).unwrap();
    let want = manifest.cases[0].outputs[0].file.as_ref().unwrap();
    let expected = std::fs::read(dir.join("vectors").join(want)).unwrap();
    mlf_fixtures::compare(&manifest.cases[0].outputs[0].dtype, &got, &expected, &manifest.cases[0]).unwrap();
    assert!(stderr.contains("profile (mean nanoseconds") && stderr.contains("arena window"), "{stderr}");
    assert!(stderr.contains("stated overhead: the hook "), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ops = doc["operators"].as_array().unwrap();
    assert_eq!(ops.len(), 3, "{doc}");
    assert_eq!(ops.iter().map(|o| o["param_bytes"].as_u64().unwrap()).collect::<Vec<_>>(), [8320, 1320, 0]);
    assert!(ops.iter().all(|o| o["ns"].as_u64().is_some() && o["arena_window"]["end"].as_u64().is_some()), "{doc}");
    let (sum, run) = (doc["operators_ns"].as_u64().unwrap(), doc["run_ns"].as_u64().unwrap());
    assert!(sum > 0 && sum <= run, "{doc}");
    let o = &doc["overhead"];
    let accounted = sum + o["hook_outside_operators"].as_u64().unwrap() + o["between_operators"].as_u64().unwrap();
    assert!(accounted >= run, "the figures and the stated overhead make up the run: {doc}");
    // The picture parses and renders.
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("dominant: operator "), "{text}");
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(&text, &opt).unwrap();
    let size = tree.size().to_int_size();
    assert_eq!((size.width(), size.height()), (1400, 1180));
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(mlf_fixtures::workspace_root().join("target/profile-digits.png")).unwrap();
}
