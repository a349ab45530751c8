//! A reference vector for the firmware templates: case 0 of a `vectors/manifest.json` (the
//! fixtures' layout: raw little-endian input and output files, with tolerances), found beside the
//! model or given with `--vectors DIR`, copied into the new crate's `vectors/`. The firmware then
//! runs the model on those inputs and compares its first output with the reference.

use std::path::{Path, PathBuf};

use mlf_build::{Error, ModelDesc, TensorInfo};
use serde_json::Value;

use crate::io_error::InFile;
use crate::template;

/// The reference vectors of the digits model bundled with cargo-mlf (case 0 of
/// `examples/digits/model/vectors`): its input and its output.
const DIGITS_INPUT: &[u8] = include_bytes!("../../templates/models/digits-vectors/case0_in_pixels.bin");
const DIGITS_OUTPUT: &[u8] = include_bytes!("../../templates/models/digits-vectors/case0_out_0.bin");

/// Largest input or output a firmware decodes from a vector at compile time (elements).
const MAX_ELEMENTS: u64 = 65536;

/// Case 0 of a set of reference vectors: the files of each input (in the model's order) and of
/// the first output, and its tolerances.
pub struct Case {
    inputs: Vec<(String, Vec<u8>)>,
    output: (String, Vec<u8>),
    rtol: f64,
    atol: f64,
}

impl Case {
    /// Case 0 of `dir/manifest.json`, when it is there and fits the model; `None` otherwise
    /// (the firmware then runs on zero inputs).
    pub fn read(dir: &Path, desc: &ModelDesc) -> Result<Option<Case>, Error> {
        let manifest = dir.join("manifest.json");
        if !manifest.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&manifest).in_file(&manifest)?;
        let v: Value = serde_json::from_str(&text).map_err(|e| Error::invalid(e.to_string()).in_file(&manifest))?;
        let case = &v["cases"][0];
        // A file the manifest names: inside the vectors' folder or the folder above it (the
        // fixtures name `../input.bin`), never elsewhere.
        let within = dir.parent().unwrap_or(dir).canonicalize().in_file(dir)?;
        let file = |entry: &Value| -> Result<Option<(String, Vec<u8>)>, Error> {
            let Some(name) = entry["file"].as_str() else { return Ok(None) };
            let Ok(path) = dir.join(name).canonicalize() else { return Ok(None) };
            let Some(base) = path.file_name().map(|b| b.to_string_lossy().into_owned()) else { return Ok(None) };
            if !path.starts_with(&within) || !path.is_file() {
                return Ok(None);
            }
            Ok(Some((base, std::fs::read(&path).in_file(&path)?)))
        };
        let mut inputs = Vec::new();
        for (i, t) in desc.inputs.iter().enumerate() {
            let entries = case["inputs"].as_array().map(Vec::as_slice).unwrap_or_default();
            let entry = entries.iter().find(|e| e["name"].as_str() == Some(t.name.as_str())).or(entries.get(i));
            match entry.map(file).transpose()?.flatten() {
                Some(f) if fits(t, &f.1) => inputs.push(f),
                _ => return Ok(None),
            }
        }
        let (Some(first), Some(out)) = (desc.outputs.first(), case["outputs"].get(0)) else { return Ok(None) };
        let Some(output) = file(out)?.filter(|f| fits(first, &f.1)) else { return Ok(None) };
        let rtol = case["rtol"].as_f64().unwrap_or(1e-5);
        let atol = case["atol"].as_f64().unwrap_or(1e-6);
        Ok(Some(Case { inputs, output, rtol, atol }))
    }

    /// The bundled digits model's case 0.
    pub fn digits() -> Case {
        Case {
            inputs: vec![("case0_in_pixels.bin".into(), DIGITS_INPUT.to_vec())],
            output: ("case0_out_0.bin".into(), DIGITS_OUTPUT.to_vec()),
            rtol: 1e-5,
            atol: 1e-6,
        }
    }

    /// Writes the files into `dir/vectors/`.
    pub fn write(&self, dir: &Path) -> Result<(), Error> {
        let vectors = dir.join("vectors");
        std::fs::create_dir_all(&vectors).in_file(&vectors)?;
        for (name, bytes) in self.inputs.iter().chain([&self.output]) {
            let path: PathBuf = vectors.join(name);
            std::fs::write(&path, bytes).in_file(&path)?;
        }
        Ok(())
    }

    /// The template's input statics decoded from the files, and the code comparing the first
    /// output with the reference.
    pub fn vars(&self, desc: &ModelDesc, module: &str) -> Result<(String, String), Error> {
        let mut statics = String::from(DECODE);
        statics.push_str(
            "\n// The inputs: case 0 of the model's reference vectors (vectors/, raw little-endian), decoded at\n\
             // compile time. Replace them with your sensor's data.\n",
        );
        for (t, (file, _)) in desc.inputs.iter().zip(&self.inputs) {
            statics.push_str(&format!(
                "#[allow(non_upper_case_globals)]\nstatic {id}: [{ty}; {n}] = le_array!({ty}, {n}, \"../vectors/{file}\"); // {name}: {dtype} {shape:?}\n",
                id = t.ident,
                ty = template::elem_type(t)?,
                n = t.numel(),
                name = t.name,
                dtype = t.dtype,
                shape = t.shape
            ));
        }
        let first = &desc.outputs[0];
        let ty = template::elem_type(first)?;
        let (rtol, atol) = if ty.starts_with('f') { (self.rtol, self.atol) } else { (0.0, 0.0) };
        statics.push_str(&format!(
            "/// What the reference computed for these inputs: the first output, `{name}`.\n\
             static EXPECTED: [{ty}; {n}] = le_array!({ty}, {n}, \"../vectors/{file}\");\n",
            name = first.name,
            n = first.numel(),
            file = self.output.0,
        ));
        let check = format!(
            "    // Compare with the reference (a float within {rtol:e} relative + {atol:e}; integers exactly).\n    \
             let worst = worst_difference(&out.{id}[..], &EXPECTED, {rtol:e}, {atol:e});\n    \
             let verdict = if worst <= 1.0 {{ \"matches\" }} else {{ \"DIFFERS from\" }};\n    \
             println!(\"{module}: output {name} {{verdict}} the reference (case 0; worst difference {{worst:.3}} of the tolerance)\");\n    \
             if worst > 1.0 {{\n        process::exit(1);\n    }}\n",
            id = first.ident,
            name = first.name,
        );
        Ok((statics, check))
    }
}

/// The macro decoding the vectors, put before the statics that use it.
const DECODE: &str = r#"/// A raw little-endian file as an array of `$t`, decoded when the firmware is compiled (the
/// values are in flash, as any other static).
macro_rules! le_array {
    ($t:ty, $n:expr, $file:literal) => ({
        const BYTES: &[u8] = include_bytes!($file);
        const SIZE: usize = core::mem::size_of::<$t>();
        assert!(BYTES.len() == $n * SIZE, concat!($file, " does not hold the tensor's bytes"));
        let mut out = [0 as $t; $n];
        let mut i = 0;
        while i < $n {
            let mut b = [0u8; SIZE];
            let mut j = 0;
            while j < SIZE {
                b[j] = BYTES[i * SIZE + j];
                j += 1;
            }
            out[i] = <$t>::from_le_bytes(b);
            i += 1;
        }
        out
    });
}
"#;

/// The comparison, appended to the firmware's `main.rs`.
pub const HELPERS: &str = r#"
/// The largest difference from the reference as a fraction of its tolerance, `atol + rtol ×
/// |reference|` (0: identical; above 1: too far; integers are compared exactly).
fn worst_difference<T: Copy + Into<f64>>(got: &[T], want: &[T], rtol: f64, atol: f64) -> f64 {
    let abs = |x: f64| if x < 0.0 { -x } else { x };
    got.iter().zip(want).fold(0.0, |worst, (&g, &w)| {
        let (g, w): (f64, f64) = (g.into(), w.into());
        let (d, allowed) = (abs(g - w), atol + rtol * abs(w));
        let fraction = if d == 0.0 { 0.0 } else if allowed > 0.0 { d / allowed } else { f64::INFINITY };
        if fraction > worst || fraction != fraction { fraction } else { worst }
    })
}
"#;

/// The template variables without reference vectors: zero inputs, no comparison.
pub fn zeros(desc: &ModelDesc) -> Result<Vec<(&'static str, String)>, Error> {
    let mut statics = String::from(
        "// The inputs: zeros until the firmware fills them (from a sensor, a camera…). With the model's\n\
         // reference vectors (`cargo mlf new --vectors DIR`, DIR holding a manifest.json) the firmware runs\n\
         // one of them and compares its output with the reference.\n",
    );
    for t in &desc.inputs {
        let ty = template::elem_type(t)?;
        let zero = if ty.starts_with('f') { "0.0" } else { "0" };
        statics.push_str(&format!(
            "#[allow(non_upper_case_globals)]\nstatic {id}: [{ty}; {n}] = [{zero}; {n}]; // {name}: {dtype} {shape:?}\n",
            id = t.ident,
            n = t.numel(),
            name = t.name,
            dtype = t.dtype,
            shape = t.shape
        ));
    }
    Ok(vec![("static_inputs", statics), ("check_reference", String::new()), ("reference_helpers", String::new())])
}

/// Whether `bytes` is exactly `t`'s size, small enough to decode at compile time, and of a type
/// the comparison takes.
fn fits(t: &TensorInfo, bytes: &[u8]) -> bool {
    let ty = template::elem_type(t).unwrap_or("");
    t.bytes() == bytes.len() as u64 && t.numel() <= MAX_ELEMENTS && !matches!(ty, "" | "i64" | "u64")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits() -> ModelDesc {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        mlf_build::open(root.join("examples/digits/model/digits.tar")).unwrap()
    }

    /// Case 0 is read from the fixtures' layout; a manifest naming a file outside the model's
    /// folder, or files that do not fit the model, gives no case (zeros).
    #[test]
    fn case_zero_from_the_fixture_layout_only() {
        let desc = digits();
        let vectors = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/vectors");
        let case = Case::read(&vectors, &desc).unwrap().expect("case 0 of the example's vectors");
        assert_eq!(case.inputs[0].0, "case0_in_pixels.bin");
        let (statics, check) = case.vars(&desc, "digits").unwrap();
        assert!(statics.contains("static pixels: [f32; 64] = le_array!(f32, 64, \"../vectors/case0_in_pixels.bin\");"));
        assert!(check.contains("worst_difference(&out.output[..], &EXPECTED, 1e-5, 1e-6)"), "{check}");

        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("model/vectors");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(t.path().join("outside.bin"), [0u8; 256]).unwrap();
        let manifest = |input: &str| {
            format!(
                "{{\"cases\":[{{\"inputs\":[{{\"name\":\"pixels\",\"file\":\"{input}\"}}],\"outputs\":[{{\"index\":0,\"file\":\"o.bin\"}}]}}]}}"
            )
        };
        std::fs::write(dir.join("o.bin"), [0u8; 40]).unwrap();
        std::fs::write(dir.join("manifest.json"), manifest("../../outside.bin")).unwrap();
        assert!(Case::read(&dir, &desc).unwrap().is_none(), "a file outside the model's folder is not read");
        std::fs::write(dir.join("short.bin"), [0u8; 8]).unwrap();
        std::fs::write(dir.join("manifest.json"), manifest("short.bin")).unwrap();
        assert!(Case::read(&dir, &desc).unwrap().is_none(), "a file of another size does not fit");
    }
}
