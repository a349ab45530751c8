//! The V4 face detectors (RFB-320, slim-320) through `include_model!` on face.jpg's input
//! vector (a crowd): the faces are found, outputs equal the emulator's, and agree with face.bin.

#[allow(dead_code)]
mod common;

#[cfg(mlf_shared)]
mod models {
    mlf_runtime::include_model!("../../shared/fixtures/kmodel/v4-fast-facedetect/RFB-320.kmodel", name = rfb320);
    mlf_runtime::include_model!("../../shared/fixtures/kmodel/v4-fast-facedetect/slim-320.kmodel", name = slim320);
}

#[cfg(mlf_shared)]
fn fixture_f32(rel: &str) -> Vec<f32> {
    mlf_fixtures::load_vec(&mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v4-fast-facedetect").join(rel))
}

#[cfg(mlf_shared)]
fn input() -> Vec<u8> {
    std::fs::read(
        mlf_fixtures::fixtures_dir().unwrap().join("kmodel/v4-fast-facedetect/input_face_320x240_rgb_chw_u8.bin"),
    )
    .unwrap()
}

/// Checks one model's (boxes, scores): equal to the emulator's outputs, and the faces it finds
/// are the faces face.bin (nncase's published float reference) finds.
#[cfg(mlf_shared)]
fn check(name: &str, boxes: &[f32], scores: &[f32], emulated: [&str; 2], min_recall: f32) {
    assert_eq!(boxes, fixture_f32(emulated[0]).as_slice(), "{name}: boxes differ from {}", emulated[0]);
    assert_eq!(scores, fixture_f32(emulated[1]).as_slice(), "{name}: scores differ from {}", emulated[1]);
    let face = fixture_f32("face.bin");
    assert_eq!(face.len(), 4420 * 6, "face.bin: 4420 priors of 4 box values and 2 scores");
    let (ref_boxes, ref_scores) = face.split_at(4420 * 4);
    let want = kmodel_yolo::ultraface::decode(ref_boxes, ref_scores, 320.0, 240.0, 0.7, 0.3);
    let got = kmodel_yolo::ultraface::decode(boxes, scores, 320.0, 240.0, 0.7, 0.3);
    let found = want.iter().filter(|w| got.iter().any(|g| g.iou(w) > 0.5)).count();
    let recall = found as f32 / want.len() as f32;
    let top_iou = got[0].iou(&want[0]);
    eprintln!(
        "{name}: {} faces (face.bin: {}), {found} of face.bin's found (IoU > 0.5); best face {:.3} at ({:.0},{:.0})-({:.0},{:.0}), IoU {top_iou:.2} with face.bin's best",
        got.len(),
        want.len(),
        got[0].prob,
        got[0].x1,
        got[0].y1,
        got[0].x2,
        got[0].y2
    );
    assert!(top_iou > 0.6, "{name}: best face IoU {top_iou}");
    assert!(recall >= min_recall, "{name}: recall {recall}");
}

#[test]
#[cfg(mlf_shared)]
fn rfb320_finds_the_face() {
    use models::rfb320 as m;
    let input = input();
    let mut model = m::Model::take().unwrap();
    let (out, stack) = common::stack_used(|| model.run(&m::Inputs { input: input.as_slice().try_into().unwrap() }));
    common::within_stack(stack, m::STACK_BYTES, file!());
    let out = out.unwrap();
    check(
        "RFB-320",
        out.output0,
        out.output1,
        ["emulated_RFB-320_out0_boxes_f32.bin", "emulated_RFB-320_out1_scores_f32.bin"],
        0.9,
    );
}

#[test]
#[cfg(mlf_shared)]
fn slim320_finds_the_face() {
    use models::slim320 as m;
    let input = input();
    let mut model = m::Model::take().unwrap();
    let (out, stack) = common::stack_used(|| model.run(&m::Inputs { input: input.as_slice().try_into().unwrap() }));
    common::within_stack(stack, m::STACK_BYTES, file!());
    let out = out.unwrap();
    check(
        "slim-320",
        out.output1,
        out.output0,
        ["emulated_slim-320_out1_boxes_f32.bin", "emulated_slim-320_out0_scores_f32.bin"],
        0.8,
    );
}

#[test]
#[cfg(not(mlf_shared))]
fn face_skipped() {
    eprintln!("SKIP kmodel face tests: ../shared/fixtures is not present");
}
