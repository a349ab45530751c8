//! Runs the 20-class YOLOv2 kmodel (V3, nncase v0.1 example) on the dog picture that comes
//! with the shared fixtures, decodes the region layer, prints the detections and writes
//! `kmodel-yolo-detections.png` (or the path given as the first argument) with the boxes drawn.
//!
//! `KMODEL_ROUNDING=nncase-v01` selects nncase v0.1's activation rounding instead of v0.2's.
//!
//! The model and the picture live in `../shared/fixtures` beside the repository and are not
//! part of it; without them the example says so and exits successfully.

#[cfg(mlf_shared)]
mlf_runtime::include_model!("../../../shared/fixtures/kmodel/v3-20classes-yolo/yolo.kmodel", name = yolo);

#[cfg(not(mlf_shared))]
fn main() {
    println!(
        "kmodel-yolo: ../shared/fixtures/kmodel is not present beside the repository, so there is no model or picture to run; nothing to do."
    );
}

#[cfg(mlf_shared)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use kmodel_yolo::{draw, region};

    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/kmodel/v3-20classes-yolo/dog.bmp");
    let out_path = std::env::args().nth(1).unwrap_or_else(|| "kmodel-yolo-detections.png".into());
    let picture = image::open(&fixture)?.to_rgb8();
    let [_, _, h, w] = yolo::INPUT_SHAPE;
    if (picture.width() as usize, picture.height() as usize) != (w, h) {
        return Err(format!(
            "{} is {}x{}, the model takes {w}x{h}",
            fixture.display(),
            picture.width(),
            picture.height()
        )
        .into());
    }
    let chw = draw::to_chw(&picture);
    let input: &[u8; 3 * 240 * 320] = chw.as_slice().try_into()?;

    let mut model = yolo::Model::take().ok_or("model already taken")?;
    // KMODEL_ROUNDING=nncase-v01 switches to nncase v0.1's activation rounding (ties and the
    // segment test as nncase v0.1's emulator did them; the README's kmodel section says more).
    if std::env::var("KMODEL_ROUNDING").is_ok_and(|v| v == "nncase-v01") {
        model.set_activation_rounding(mlf_runtime::kmodel::ActivationRounding::NncaseV01);
        println!("activation rounding: nncase v0.1 (variant A)");
    }
    let started = std::time::Instant::now();
    let out = model.run(&yolo::Inputs { input })?;
    let elapsed = started.elapsed();
    let [_, _, gh, gw] = yolo::OUTPUT_SHAPE;
    let dets = region::decode(out.output, gw, gh, &region::VOC_ANCHORS, 20, w as f32, h as f32, 0.5, 0.2);

    println!(
        "{} on {} ({:.1} ms, {} KPU MACs emulated)",
        yolo::NAME,
        fixture.display(),
        elapsed.as_secs_f64() * 1e3,
        yolo::KPU_MACS
    );
    let mut annotated = picture.clone();
    for d in &dets {
        println!(
            "  {:<12} {:.3}  box ({:.0}, {:.0}) - ({:.0}, {:.0})",
            region::VOC_CLASSES[d.class],
            d.prob,
            d.x1,
            d.y1,
            d.x2,
            d.y2
        );
        draw::rect(&mut annotated, d.x1, d.y1, d.x2, d.y2, draw::color(d.class), 2);
    }
    annotated.save(&out_path)?;
    println!("wrote {out_path}");
    Ok(())
}
