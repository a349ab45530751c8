//! The inputs of `cargo mlf run`: `--input NAME=FILE` arguments matched to the model's inputs,
//! and the inputs not given filled as `--fill` says (zeros, ones or seeded random values).

use std::path::PathBuf;

use mlf_build::__private::npy;
use mlf_build::{Error, ModelDesc, TensorInfo};

/// What the inputs not given with `--input` are filled with (as tvmc's `--fill-mode`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Every element 0.
    Zeros,
    /// Every element 1 (1.0 for floats).
    Ones,
    /// Seeded pseudo-random values (`--seed`): integers spanning the dtype's whole range, floats
    /// in [0, 1).
    Random,
}

/// The seed of `--fill random` when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 42;

/// The raw little-endian bytes of every input, in the model's order: read from the files
/// given, or filled as `fill` says (seeded with `seed`, one generator for all inputs in the
/// model's order). Without `fill` a missing input is an error naming it and the flags to add.
pub fn input_bytes(desc: &ModelDesc, given: &[String], fill: Option<Fill>, seed: u64) -> Result<Vec<Vec<u8>>, Error> {
    let files = assign_inputs(desc, given)?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut out = Vec::with_capacity(files.len());
    for (t, file) in desc.inputs.iter().zip(files) {
        let bytes = match (file, fill) {
            (Some(file), _) => npy::read_input(&file, t)?,
            (None, Some(fill)) => {
                let how = match fill {
                    Fill::Random => format!("random values (seed {seed})"),
                    other => format!("{other:?}").to_lowercase(),
                };
                eprintln!("input {} ({} {:?}) filled with {how}", input_name(t), t.dtype, t.shape);
                filled(t, fill, &mut rng).map_err(|e| e.at(format!("inputs.{}", t.name)))?
            }
            (None, None) => {
                return Err(Error::invalid(format!(
                    "missing input {} ({} {:?}): add --input {}=FILE (a .npy file or raw little-endian bytes), \
                     or --fill zeros|ones|random to fill the inputs not given",
                    input_name(t),
                    t.dtype,
                    t.shape,
                    t.name
                )));
            }
        };
        out.push(bytes);
    }
    Ok(out)
}

/// Input `t` filled as `fill` says, as raw little-endian bytes.
pub fn filled(t: &TensorInfo, fill: Fill, rng: &mut fastrand::Rng) -> Result<Vec<u8>, Error> {
    let ty = t.dtype.require_rust_type()?;
    let n = usize::try_from(t.numel_checked()?).map_err(|_| Error::invalid("input too large to fill"))?;
    let size = t.dtype.elem_bytes() as usize;
    let one: Vec<u8> = match ty {
        "f32" => 1f32.to_le_bytes().to_vec(),
        "f64" => 1f64.to_le_bytes().to_vec(),
        _ => {
            let mut b = vec![0; size];
            b[0] = 1;
            b
        }
    };
    let mut out = vec![0u8; n * size];
    let bool = t.dtype.code == mlf_build::__private::DTypeCode::Bool;
    match (fill, ty) {
        (Fill::Zeros, _) => {}
        // A bool is 0 or 1.
        (Fill::Random, _) if bool => out.iter_mut().for_each(|b| *b = rng.bool() as u8),
        (Fill::Ones, _) => out.chunks_exact_mut(size).for_each(|c| c.copy_from_slice(&one)),
        // Uniform bytes are uniform integers over the dtype's whole range.
        (Fill::Random, ty) if ty != "f32" && ty != "f64" => rng.fill(&mut out),
        (Fill::Random, "f32") => out.chunks_exact_mut(4).for_each(|c| c.copy_from_slice(&rng.f32().to_le_bytes())),
        (Fill::Random, _) => out.chunks_exact_mut(8).for_each(|c| c.copy_from_slice(&rng.f64().to_le_bytes())),
    }
    Ok(out)
}

/// Matches `--input` arguments to the model's inputs, in the model's order (`None`: not given).
fn assign_inputs(desc: &ModelDesc, given: &[String]) -> Result<Vec<Option<PathBuf>>, Error> {
    let names = || desc.inputs.iter().map(input_name).collect::<Vec<_>>().join(", ");
    let mut files: Vec<Option<PathBuf>> = vec![None; desc.inputs.len()];
    for g in given {
        let (name, file) = match g.split_once('=') {
            Some((n, f)) => (Some(n), f),
            None => (None, g.as_str()),
        };
        let idx = match name {
            Some(n) => desc.inputs.iter().position(|t| t.name == n || t.ident == n).ok_or_else(|| {
                let hint = closest(desc, n).map(|c| format!("did you mean {c:?}? ")).unwrap_or_default();
                Error::invalid(format!("no input named {n:?}; {hint}the model's inputs are: {}", names()))
            })?,
            None if desc.inputs.len() == 1 => 0,
            None => {
                return Err(Error::invalid(format!(
                    "the model has {} inputs; name each: --input NAME=FILE ({})",
                    desc.inputs.len(),
                    names()
                )));
            }
        };
        if files[idx].replace(PathBuf::from(file)).is_some() {
            return Err(Error::invalid(format!("input {} given twice", desc.inputs[idx].name)));
        }
    }
    Ok(files)
}

/// An input's name, with its Rust field name when that differs.
fn input_name(t: &TensorInfo) -> String {
    if t.ident == t.name { t.name.clone() } else { format!("{} (field {})", t.name, t.ident) }
}

/// The model's input name closest to `given` (a likely misspelling), if one is close.
fn closest(desc: &ModelDesc, given: &str) -> Option<String> {
    desc.inputs
        .iter()
        .flat_map(|t| [&t.name, &t.ident])
        .map(|n| (strsim::damerau_levenshtein(&n.to_lowercase(), &given.to_lowercase()), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlf_build::DType;

    fn tensor(dtype: &str, n: u64) -> TensorInfo {
        TensorInfo {
            name: "x".into(),
            ident: "x".into(),
            dtype: DType::parse(dtype).unwrap(),
            shape: vec![n],
            shape_source: "test".into(),
            dtype_source: "test".into(),
        }
    }

    #[test]
    fn zeros_and_ones_of_every_dtype() {
        let mut rng = fastrand::Rng::with_seed(DEFAULT_SEED);
        assert_eq!(filled(&tensor("float32", 2), Fill::Zeros, &mut rng).unwrap(), [0; 8]);
        assert_eq!(filled(&tensor("float32", 1), Fill::Ones, &mut rng).unwrap(), 1f32.to_le_bytes());
        assert_eq!(filled(&tensor("float64", 1), Fill::Ones, &mut rng).unwrap(), 1f64.to_le_bytes());
        assert_eq!(filled(&tensor("int8", 3), Fill::Ones, &mut rng).unwrap(), [1, 1, 1]);
        assert_eq!(filled(&tensor("uint16", 2), Fill::Ones, &mut rng).unwrap(), [1, 0, 1, 0]);
        assert_eq!(filled(&tensor("int64", 1), Fill::Ones, &mut rng).unwrap(), 1i64.to_le_bytes());
    }

    #[test]
    fn random_is_seeded_and_spans_the_range() {
        let fill = |dtype: &str, seed: u64| {
            filled(&tensor(dtype, 4096), Fill::Random, &mut fastrand::Rng::with_seed(seed)).unwrap()
        };
        assert_eq!(fill("int8", DEFAULT_SEED), fill("int8", DEFAULT_SEED), "the same seed, the same values");
        assert_ne!(fill("int8", DEFAULT_SEED), fill("int8", 7), "another seed, other values");
        let i8s: Vec<i8> = fill("int8", DEFAULT_SEED).iter().map(|b| *b as i8).collect();
        assert!(i8s.iter().any(|v| *v < -100) && i8s.iter().any(|v| *v > 100), "int8 spans its range");
        let f32s: Vec<f32> =
            fill("float32", DEFAULT_SEED).chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(f32s.iter().all(|v| (0.0..1.0).contains(v)), "floats in [0, 1)");
        assert!(f32s.iter().any(|v| *v < 0.1) && f32s.iter().any(|v| *v > 0.9));
        let f64s: Vec<f64> =
            fill("float64", 1).chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(f64s.iter().all(|v| (0.0..1.0).contains(v)));
    }
}
