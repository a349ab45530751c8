//! Test support for mlf: locates the shared fixtures (`../shared/fixtures` beside the
//! repository, or `$MLF_FIXTURES`), reads `vectors/manifest.json`, and compares outputs the way
//! the fixtures' README says (integers exactly, floats within `rtol`/`atol`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod derived;
pub mod synth;

/// The workspace root (the folder holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crate is inside the workspace").to_path_buf()
}

/// The digits MLF the repository carries (`examples/digits/model/digits.tar`).
pub fn digits_tar() -> PathBuf {
    workspace_root().join("examples/digits/model/digits.tar")
}

/// The regular files of the digits MLF as (name without `./`, bytes), sorted by name: the
/// starting point of tests that damage or edit an archive.
pub fn digits_members() -> Vec<(String, Vec<u8>)> {
    tar_members(&digits_tar())
}

/// The digits MLP as an AOT archive with the C interface (`mlf-build/tests/models/digits-aot-c.tar`,
/// a copy of the copyable fixture `digits-mlp-aot-c`); its outputs are those of
/// `examples/digits/model/vectors`.
pub fn digits_aot_c_tar() -> PathBuf {
    workspace_root().join("mlf-build/tests/models/digits-aot-c.tar")
}

/// The regular files of a tar as (name without `./`, bytes), sorted by name.
pub fn tar_members(path: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut archive = tar::Archive::new(file);
    let mut out = Vec::new();
    for entry in archive.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = entry.path().expect("member name").to_string_lossy().trim_start_matches("./").to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).expect("member data");
        out.push((name, data));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Replaces the text of member `name` with `edit` of it (an edited copy of an archive).
pub fn edit_member(members: &mut [(String, Vec<u8>)], name: &str, edit: impl FnOnce(&str) -> String) {
    let (_, data) = members.iter_mut().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no member {name}"));
    let text = String::from_utf8(std::mem::take(data)).expect("a text member");
    *data = edit(&text).into_bytes();
}

/// `text` with `from` replaced by `to`, which must occur in it (a test edit that silently does
/// nothing would test nothing).
pub fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the text");
    text.replacen(from, to, 1)
}

/// Writes members as files under `dir` (an extracted archive).
pub fn write_members(dir: &Path, members: &[(String, Vec<u8>)]) {
    for (name, data) in members {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().expect("a member is inside dir")).expect("create folder");
        std::fs::write(&p, data).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

/// Writes members as a tar archive at `path` (an edited copy of an archive as a `.tar`).
pub fn write_tar(path: &Path, members: &[(String, Vec<u8>)]) {
    let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut builder = tar::Builder::new(file);
    for (name, data) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, format!("./{name}"), data.as_slice()).expect("append a member");
    }
    builder.finish().expect("finish the tar");
}

/// The shared fixtures folder, if present.
pub fn fixtures_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("MLF_FIXTURES") {
        let p = PathBuf::from(p);
        return p.is_dir().then_some(p);
    }
    let p = workspace_root().parent()?.join("shared/fixtures");
    p.is_dir().then_some(p)
}

/// The shared fixtures folder, or `None` after printing that tests using it are skipped.
pub fn fixtures_or_skip(test: &str) -> Option<PathBuf> {
    let d = fixtures_dir();
    if d.is_none() {
        eprintln!("SKIP {test}: ../shared/fixtures is not present (set MLF_FIXTURES to point at it)");
    }
    d
}

/// An MLF fixture folder.
#[derive(Clone, Debug)]
pub struct MlfFixture {
    /// Folder name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// `model.tar` or `model/`.
    pub model: PathBuf,
}

/// Every MLF fixture under `fixtures/mlf`, sorted by name.
pub fn mlf_fixtures(root: &Path) -> Vec<MlfFixture> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(root.join("mlf")) else { return out };
    for e in rd.flatten() {
        let dir = e.path();
        let tar = dir.join("model.tar");
        let model = if tar.is_file() { tar } else { dir.join("model") };
        if model.exists() {
            out.push(MlfFixture { name: e.file_name().to_string_lossy().into_owned(), dir, model });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `vectors/manifest.json`.
#[derive(Clone, Debug, Deserialize)]
pub struct Manifest {
    /// Test cases.
    pub cases: Vec<Case>,
}

/// One case.
#[derive(Clone, Debug, Deserialize)]
pub struct Case {
    /// Inputs.
    pub inputs: Vec<TensorRef>,
    /// Expected outputs.
    pub outputs: Vec<TensorRef>,
    /// Compare exactly.
    #[serde(default)]
    pub exact: Option<bool>,
    /// Relative tolerance.
    #[serde(default)]
    pub rtol: Option<f64>,
    /// Absolute tolerance.
    #[serde(default)]
    pub atol: Option<f64>,
    /// Label, when the fixture has one.
    #[serde(default)]
    pub label: Option<serde_json::Value>,
}

/// A tensor file reference.
#[derive(Clone, Debug, Deserialize)]
pub struct TensorRef {
    /// Input name (null for kmodel inputs).
    #[serde(default)]
    pub name: Option<String>,
    /// Output index.
    #[serde(default)]
    pub index: Option<usize>,
    /// dtype string.
    pub dtype: String,
    /// Shape (`null` in kmodel manifests, read as empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub shape: Vec<u64>,
    /// Element count, when the manifest gives it instead of a shape (kmodel manifests).
    #[serde(default)]
    pub size: Option<u64>,
    /// File name inside `vectors/` (absent for secondary references).
    #[serde(default)]
    pub file: Option<String>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    Ok(Option::<Vec<u64>>::deserialize(d)?.unwrap_or_default())
}

impl Manifest {
    /// Reads `dir/vectors/manifest.json`, if present.
    pub fn read(dir: &Path) -> Option<Manifest> {
        let text = std::fs::read(dir.join("vectors/manifest.json")).ok()?;
        Some(serde_json::from_slice(&text).expect("manifest.json parses"))
    }
}

/// Compares raw little-endian output bytes against the reference, returning a description of the
/// first mismatch.
pub fn compare(dtype: &str, got: &[u8], want: &[u8], case: &Case) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} bytes, expected {}", got.len(), want.len()));
    }
    let exact = case.exact.unwrap_or(false) || !dtype.starts_with("float");
    if exact || dtype != "float32" {
        if got != want {
            let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!("byte {i} differs: {} vs {}", got[i], want[i]));
        }
        return Ok(());
    }
    let rtol = case.rtol.unwrap_or(1e-5);
    let atol = case.atol.unwrap_or(1e-6);
    for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        let g = f32::from_le_bytes(g.try_into().unwrap()) as f64;
        let w = f32::from_le_bytes(w.try_into().unwrap()) as f64;
        if (g - w).abs() > atol + rtol * w.abs() || g.is_nan() != w.is_nan() {
            return Err(format!("element {i}: got {g}, expected {w} (rtol {rtol}, atol {atol})"));
        }
    }
    Ok(())
}

/// A numeric type read from little-endian bytes.
pub trait LeBytes: Copy + Default {
    /// Size in bytes.
    const SIZE: usize;
    /// From `SIZE` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("size"))
            }
        }
    )*};
}
le_bytes!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

/// Reads a raw little-endian tensor file into a boxed array, checking its length.
pub fn load<T: LeBytes, const N: usize>(path: &Path) -> Box<[T; N]> {
    let v = load_vec::<T>(path);
    assert_eq!(v.len(), N, "{}: {} elements, expected {N}", path.display(), v.len());
    v.into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!())
}

/// Reads a raw little-endian tensor file of any length (a whole number of elements).
pub fn load_vec<T: LeBytes>(path: &Path) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    from_le(&bytes)
}

/// The little-endian values in `bytes`, which must hold a whole number of them.
pub fn from_le<T: LeBytes>(bytes: &[u8]) -> Vec<T> {
    assert_eq!(bytes.len() % T::SIZE, 0, "{} bytes are not a whole number of {}-byte values", bytes.len(), T::SIZE);
    bytes.chunks_exact(T::SIZE).map(T::from_le).collect()
}

/// The largest |a − b| of two equally long slices; NaN when a difference is NaN (so that a
/// bound on it fails).
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "comparing {} values with {}", a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, |m, d| if d > m || d.is_nan() { d } else { m })
}

/// Median wall time of `f` over at least 11 runs, continuing up to `budget` (benchmarks only).
pub fn median_time(budget: std::time::Duration, mut f: impl FnMut()) -> std::time::Duration {
    for _ in 0..3 {
        f();
    }
    let mut times = Vec::new();
    let start = std::time::Instant::now();
    while times.len() < 11 || (start.elapsed() < budget && times.len() < 10_000) {
        let t = std::time::Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

pub mod kmodel_synth;
