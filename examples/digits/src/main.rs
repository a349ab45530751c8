//! Classifies the eight labelled 8×8 handwritten digits in `model/vectors/` with an sklearn MLP compiled by
//! Apache TVM (graph executor, Model Library Format) and prints the accuracy; exits with a failure
//! status when any digit is misclassified (CI runs it).
//!
//! The model becomes a typed module at build time: `digits::Inputs { pixels: &[f32; 64] }` in,
//! `digits::Outputs { output: &[f32; 10] }` out, weights in flash, 176 bytes of static RAM.

mlf_runtime::include_model!("model/digits.tar");

/// The digits and their labels (`model/vectors/manifest.json`; cases 8 and 9 there are random
/// noise used as extra reference inputs, not digits, so they are left out).
const CASES: [(&[u8; 256], u8); 8] = [
    (include_bytes!("../model/vectors/case0_in_pixels.bin"), 2),
    (include_bytes!("../model/vectors/case1_in_pixels.bin"), 8),
    (include_bytes!("../model/vectors/case2_in_pixels.bin"), 2),
    (include_bytes!("../model/vectors/case3_in_pixels.bin"), 6),
    (include_bytes!("../model/vectors/case4_in_pixels.bin"), 6),
    (include_bytes!("../model/vectors/case5_in_pixels.bin"), 7),
    (include_bytes!("../model/vectors/case6_in_pixels.bin"), 1),
    (include_bytes!("../model/vectors/case7_in_pixels.bin"), 9),
];

/// Decodes little-endian f32 pixels.
fn pixels(bytes: &[u8; 256]) -> [f32; 64] {
    core::array::from_fn(|i| f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()))
}

/// Draws an 8×8 digit (intensities scaled to 0..1) with characters.
fn draw(p: &[f32; 64]) -> [String; 8] {
    core::array::from_fn(|row| {
        p[row * 8..row * 8 + 8]
            .iter()
            .map(|&v| [' ', '.', ':', '#'][(v.clamp(0.0, 1.0) * 3.99) as usize])
            .flat_map(|c| [c, c])
            .collect()
    })
}

fn main() -> Result<std::process::ExitCode, mlf_runtime::Error> {
    let mut model = digits::Model::take().expect("taken once");
    println!(
        "digits: TVM model `{}`, input {:?}, output {:?}, {} bytes of static RAM (TVM's executor: {} bytes)\n",
        digits::NAME,
        digits::PIXELS_SHAPE,
        digits::OUTPUT_SHAPE,
        digits::ARENA_BYTES,
        digits::TVM_PLAN_BYTES
    );
    let mut correct = 0;
    for (i, (bytes, label)) in CASES.iter().enumerate() {
        let input = pixels(bytes);
        let out = model.run(&digits::Inputs { pixels: &input })?;
        let (predicted, p) =
            out.output.iter().enumerate().fold((0, f32::MIN), |best, (k, &v)| if v > best.1 { (k, v) } else { best });
        let ok = predicted == *label as usize;
        correct += ok as usize;
        println!("case {i}: label {label}, predicted {predicted} (p = {p:.3}) {}", if ok { "ok" } else { "WRONG" });
        for line in draw(&input) {
            println!("    |{line}|");
        }
    }
    println!("\naccuracy: {correct}/{} = {:.0}%", CASES.len(), 100.0 * correct as f64 / CASES.len() as f64);
    // Every digit is classified right by the model; a wrong one means the build or the run is broken.
    if correct != CASES.len() {
        eprintln!("error: {} of {} digits misclassified", CASES.len() - correct, CASES.len());
        return Ok(std::process::ExitCode::FAILURE);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
