//! The runtime parser and interpreter on the real kmodels in ../shared/fixtures/kmodel
//! (skipped, with a SKIP line, when the fixtures are absent).

use std::path::{Path, PathBuf};

use mlf_kmodel::{self as kmodel, ActivationRounding, KmodelError, Memory, Model, Options, Step};

fn fixtures() -> Option<PathBuf> {
    mlf_fixtures::fixtures_or_skip("kmodel runtime fixtures").map(|p| p.join("kmodel"))
}

/// Runs `bytes` on `input` with fresh memory; returns every output's bytes.
fn run(bytes: &[u8], input: &[u8], rounding: ActivationRounding) -> Result<Vec<Vec<u8>>, KmodelError> {
    let m = Model::parse(bytes)?;
    let req = m.requirements();
    // u64 backing keeps the buffers 8-aligned.
    let mut main = vec![0u64; (req.main as usize).div_ceil(8)];
    let mut kpu = vec![0u8; req.kpu as usize];
    let mut scratch = vec![0u8; req.scratch as usize];
    let mut steps = vec![Step::Empty; m.steps()];
    m.decode_into(&mut steps)?;
    let main_b: &mut [u8] = bytemuck_bytes(&mut main);
    kmodel::run(
        &m,
        &steps,
        Memory { main: main_b, kpu: &mut kpu, scratch: &mut scratch },
        input,
        Options { rounding },
    )?;
    let main_b: &[u8] = bytemuck_bytes(&mut main);
    (0..m.outputs()).map(|i| kmodel::output(&m, main_b, &kpu, i).map(<[u8]>::to_vec)).collect()
}

fn bytemuck_bytes(v: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(v)
}

fn f32s(b: &[u8]) -> Vec<f32> {
    mlf_fixtures::from_le(b)
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn every_fixture_parses_or_is_refused_for_what_it_is() {
    let Some(dir) = fixtures() else { return };
    let mut n = 0;
    for e in walk(&dir) {
        if e.extension().is_some_and(|x| x == "kmodel") {
            let b = read(&e);
            let r = Model::parse(&b);
            let name = e.strip_prefix(&dir).unwrap().display().to_string();
            match (name.split('/').next().unwrap(), &r) {
                (d, Err(KmodelError::LegacyV1)) if d.starts_with("v1-") => {}
                (d, Err(KmodelError::V5NotRunnable)) if d.starts_with("v5-") => {}
                (d, Ok(m)) if d.starts_with("v3-") || d.starts_with("v4-") => {
                    eprintln!(
                        "{name}: V{} {} steps, {} bytes + {} trailing, req {:?}",
                        m.version(),
                        m.steps(),
                        m.len(),
                        b.len() - m.len(),
                        m.requirements()
                    );
                }
                _ => panic!("{name}: {r:?}"),
            }
            n += 1;
        }
    }
    assert!(n >= 10, "only {n} kmodels found");
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn iris_v3_and_v4_reproduce_the_expected_output() {
    let Some(dir) = fixtures() else { return };
    for v in ["v3-iris", "v4-iris"] {
        let d = dir.join(v);
        let out = run(
            &read(&d.join("iris.kmodel")),
            &read(&d.join("input_features_f32le.bin")),
            ActivationRounding::NncaseV02,
        )
        .unwrap();
        let got = f32s(&out[0]);
        let want = f32s(&read(&d.join("expected_output_f32le.bin")));
        eprintln!("{v}: got {got:?} want {want:?}");
        assert_eq!(got.len(), want.len(), "{v}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-6 * w.abs(), "{v}: {got:?} vs {want:?}");
        }
        if v == "v3-iris" {
            let printed: Vec<String> = got.iter().map(|x| format!("{x:.6}")).collect();
            assert_eq!(printed, ["16.077795", "5.607656", "-2.071745"]);
        }
    }
}

/// Runs a model and returns (main memory, outputs).
fn run_main(bytes: &[u8], input: &[u8], rounding: ActivationRounding) -> (Vec<u8>, Vec<Vec<u8>>) {
    let m = Model::parse(bytes).unwrap();
    let req = m.requirements();
    let mut main = vec![0u64; (req.main as usize).div_ceil(8)];
    let mut kpu = vec![0u8; req.kpu as usize];
    let mut scratch = vec![0u8; req.scratch as usize];
    let mut steps = vec![Step::Empty; m.steps()];
    m.decode_into(&mut steps).unwrap();
    kmodel::run(
        &m,
        &steps,
        Memory { main: bytemuck_bytes(&mut main), kpu: &mut kpu, scratch: &mut scratch },
        input,
        Options { rounding },
    )
    .unwrap();
    let mb = bytemuck_bytes(&mut main).to_vec();
    let outs = (0..m.outputs()).map(|i| kmodel::output(&m, &mb, &kpu, i).unwrap().to_vec()).collect();
    (mb, outs)
}

/// (positions equal, max |diff|) of two byte strings.
fn agreement(a: &[u8], b: &[u8]) -> (usize, u8) {
    assert_eq!(a.len(), b.len());
    let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
    let max = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
    (same, max)
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn yolo_models_agree_with_the_emulated_kpu_outputs() {
    let Some(dir) = fixtures() else { return };
    let input = read(&dir.join("v3-20classes-yolo/input_dog_320x240_rgb_chw_u8.bin"));
    for (d, file) in [
        ("v3-20classes-yolo", "yolo.kmodel"),
        ("v3-kpu-demo-20classes", "yolo.kmodel"),
        ("v4-20classes-yolo", "yolo.kmodel"),
    ] {
        let dd = dir.join(d);
        let (main, outs) = run_main(&read(&dd.join(file)), &input, ActivationRounding::NncaseV02);
        let want = read(&dd.join("emulated_lastconv_u8_dog.bin"));
        let (same, max) = agreement(&main[..8750], &want);
        let want_f = f32s(&read(&dd.join("emulated_output_f32_dog.bin")));
        let got_f = f32s(&outs[0]);
        let fmax = mlf_fixtures::max_abs_diff(&got_f, &want_f);
        eprintln!(
            "{d}: u8 {same}/8750 equal ({:.3}%), max |diff| {max}; f32 max |diff| {fmax}",
            100.0 * same as f64 / 8750.0
        );
        assert!(same * 1000 >= 8750 * 999 && max <= 1, "{d}: {same}/8750, max {max}");
        assert_eq!(fmax, 0.0, "{d}: the f32 outputs equal the emulator's");
    }
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn face_models_agree_with_the_emulated_outputs_and_face_bin() {
    let Some(dir) = fixtures() else { return };
    let d = dir.join("v4-fast-facedetect");
    let input = read(&d.join("input_face_320x240_rgb_chw_u8.bin"));
    let face = f32s(&read(&d.join("face.bin")));
    let (ref_boxes, ref_scores) = face.split_at(4420 * 4);
    for (model, boxes_i, scores_i, files) in [
        ("RFB-320", 0, 1, ["emulated_RFB-320_out0_boxes_f32.bin", "emulated_RFB-320_out1_scores_f32.bin"]),
        ("slim-320", 1, 0, ["emulated_slim-320_out1_boxes_f32.bin", "emulated_slim-320_out0_scores_f32.bin"]),
    ] {
        let (_, outs) = run_main(&read(&d.join(format!("{model}.kmodel"))), &input, ActivationRounding::NncaseV02);
        let boxes = f32s(&outs[boxes_i]);
        let scores = f32s(&outs[scores_i]);
        for (got, file) in [(&boxes, files[0]), (&scores, files[1])] {
            let want = f32s(&read(&d.join(file)));
            let max = mlf_fixtures::max_abs_diff(got, &want);
            let same = got.iter().zip(&want).filter(|(a, b)| a == b).count();
            eprintln!("{model} vs {file}: {same}/{} identical, max |diff| {max:e}", want.len());
            assert!(max <= 1e-4, "{model} {file}: max diff {max}");
        }
        // Against the published float reference: same top prior, close scores.
        let face_score = |s: &[f32]| s.chunks_exact(2).map(|c| c[1]).collect::<Vec<_>>();
        let (gs, rs) = (face_score(&scores), face_score(ref_scores));
        assert_eq!((gs.len(), boxes.len()), (rs.len(), ref_boxes.len()), "{model}: output sizes");
        let argmax =
            |v: &[f32]| v.iter().enumerate().fold((0, f32::MIN), |a, (i, &x)| if x > a.1 { (i, x) } else { a });
        let (gi, gv) = argmax(&gs);
        let (ri, rv) = argmax(&rs);
        let mae = gs.iter().zip(&rs).map(|(a, b)| (a - b).abs()).sum::<f32>() / gs.len() as f32;
        let corr = {
            let (ma, mb) = (gs.iter().sum::<f32>() / gs.len() as f32, rs.iter().sum::<f32>() / rs.len() as f32);
            let cov: f32 = gs.iter().zip(&rs).map(|(a, b)| (a - ma) * (b - mb)).sum();
            let va: f32 = gs.iter().map(|a| (a - ma) * (a - ma)).sum();
            let vb: f32 = rs.iter().map(|b| (b - mb) * (b - mb)).sum();
            cov / (va.sqrt() * vb.sqrt())
        };
        let bmae = boxes.iter().zip(ref_boxes).map(|(a, b)| (a - b).abs()).sum::<f32>() / boxes.len() as f32;
        eprintln!(
            "{model} vs face.bin: top prior {gi} ({gv:.4}) vs {ri} ({rv:.4}); score MAE {mae:.4}, corr {corr:.3}; box MAE {bmae:.4}"
        );
        assert_eq!(gi, ri, "{model}: top prior");
        assert!(corr > 0.9, "{model}: correlation {corr}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn mixed_cpu_kpu_models_run_and_their_softmax_sums_to_one() {
    // No reference vectors exist for these (camera/sensor demos): run them on synthetic
    // inputs and check the invariant their last layer guarantees.
    let Some(dir) = fixtures() else { return };
    // V3 MNIST: K210_CONV, DEQUANTIZE, TF_FLATTEN, FC, QUANTIZE, ADD/REMOVE_PADDING, SOFTMAX.
    let digit: Vec<u8> =
        (0..28 * 28).map(|i| if (i % 28 > 10 && i % 28 < 17) && i / 28 > 4 && i / 28 < 24 { 255 } else { 0 }).collect();
    let (_, outs) = run_main(&read(&dir.join("v3-mnist-maixpy/mnist.kmodel")), &digit, ActivationRounding::NncaseV02);
    let p = f32s(&outs[0]);
    let best = p.iter().enumerate().fold((0, 0f32), |a, (i, &v)| if v > a.1 { (i, v) } else { a });
    eprintln!("mnist on a vertical bar: {p:?} -> {}", best.0);
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    // V4 mask classifier: pad (crop), reduce_window2d, quantize, kpu_upload, transpose, matmul,
    // reduce, binary with broadcast, table_lookup1d.
    let thermal: Vec<u8> = (0..32 * 32).map(|i| ((i * 7) % 256) as u8).collect();
    let (_, outs) =
        run_main(&read(&dir.join("v4-mask-detect/mask_detect.kmodel")), &thermal, ActivationRounding::NncaseV02);
    let p = f32s(&outs[0]);
    eprintln!("mask classifier: {p:?}");
    assert_eq!(p.len(), 3);
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 0.05, "{p:?}");
    // V4 alpha1 YOLO: the max_2_s1 pool runs on the CPU (dequantize → reduce_window2d →
    // quantize → kpu_upload); its output stays close to the beta compile's.
    let input = read(&dir.join("v3-20classes-yolo/input_dog_320x240_rgb_chw_u8.bin"));
    let (_, a) = run_main(
        &read(&dir.join("v4-20classes-yolo/yolo-v0.2.0-alpha1.kmodel")),
        &input,
        ActivationRounding::NncaseV02,
    );
    let (_, b) = run_main(&read(&dir.join("v4-20classes-yolo/yolo.kmodel")), &input, ActivationRounding::NncaseV02);
    let (a, b) = (f32s(&a[0]), f32s(&b[0]));
    assert_eq!(a.len(), b.len());
    let mad = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
    let (ma, mb) = (a.iter().sum::<f32>() / a.len() as f32, b.iter().sum::<f32>() / b.len() as f32);
    let cov: f32 = a.iter().zip(&b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let corr = cov
        / (a.iter().map(|x| (x - ma) * (x - ma)).sum::<f32>().sqrt()
            * b.iter().map(|y| (y - mb) * (y - mb)).sum::<f32>().sqrt());
    eprintln!("alpha1 vs beta YOLO: mean |diff| {mad}, correlation {corr}");
    assert!(corr > 0.95, "{corr}");
}
