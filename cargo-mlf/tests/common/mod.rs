#![allow(dead_code)] // each test program uses a part
//! Shared by the tests and the `external` bench: `cargo mlf run` on a fixture's reference case,
//! and the paths it reports on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::{Case, Manifest, compare};

/// `cargo mlf run MODEL --raw --output-dir OUT --build-dir WORK` with an `--input` for every
/// input of `case` (files in `dir/vectors`).
pub fn run_command(model: &Path, dir: &Path, case: &Case, out: &Path, work: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
    cmd.args(["mlf", "run"]).arg(model).arg("--raw").arg("--output-dir").arg(out).arg("--build-dir").arg(work);
    for i in &case.inputs {
        // Inputs are in manifest order; kmodel inputs have no names and are the only input.
        let file = dir.join("vectors").join(i.file.as_ref().expect("an input file"));
        match &i.name {
            Some(name) => cmd.arg("--input").arg(format!("{name}={}", file.display())),
            None => cmd.arg("--input").arg(&file),
        };
    }
    cmd
}

/// The path on the line of `cargo mlf run`'s stderr that starts with `prefix`: `"running "`
/// (the program it built) or `"parameters from "` (the split folder or archive it read).
#[allow(dead_code)] // not every test binary that shares this module reads the paths
pub fn reported(stderr: &str, prefix: &str) -> Option<PathBuf> {
    stderr.lines().find_map(|l| l.strip_prefix(prefix)).map(PathBuf::from)
}

/// The file `cargo mlf run` wrote output `index` to, from its stderr line
/// `output <index> (<name>, <dtype> <shape>) → <path>`.
pub fn output_file(stderr: &str, index: usize) -> PathBuf {
    let prefix = format!("output {index} (");
    stderr
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .find_map(|l| l.split_once(" → ").map(|(_, p)| PathBuf::from(p)))
        .unwrap_or_else(|| panic!("no line for output {index} in: {stderr}"))
}

/// Where `cargo mlf run`'s tests build.
pub fn work_dir() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-tests")
}

/// Runs every case of the manifest in `dir` through `cargo mlf run` (with `extra` arguments) and
/// returns the number of cases checked.
pub fn run_cases(model: &Path, dir: &Path) -> usize {
    run_cases_with(model, dir, &[]).cases
}

/// What [`run_cases_with`] ran.
pub struct Ran {
    /// Cases checked.
    pub cases: usize,
    /// The program `cargo mlf run` built.
    pub exe: PathBuf,
    /// The split folder or archive the parameters came from (external parameters).
    pub params: Option<PathBuf>,
}

/// Like [`run_cases`], with `extra` arguments.
pub fn run_cases_with(model: &Path, dir: &Path, extra: &[&std::ffi::OsStr]) -> Ran {
    let manifest = Manifest::read(dir).expect("manifest");
    let mut ran = Ran { cases: 0, exe: PathBuf::new(), params: None };
    for (ci, case) in manifest.cases.iter().enumerate() {
        let tag: String = extra.iter().map(|a| a.to_string_lossy().replace(['/', '-'], "")).collect();
        let out = work_dir().join("out").join(format!(
            "{}-{}-{tag}-{ci}",
            dir.file_name().unwrap().to_string_lossy(),
            model.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&out);
        let o = run_command(model, dir, case, &out, &work_dir()).args(extra).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{}: {stderr}", model.display());
        if let Some(exe) = reported(&stderr, "running ") {
            ran.exe = exe;
        }
        ran.params = reported(&stderr, "parameters from ");
        for (k, want) in case.outputs.iter().enumerate() {
            let got = std::fs::read(output_file(&stderr, k)).unwrap();
            let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
            compare(&want.dtype, &got, &expected, case)
                .unwrap_or_else(|e| panic!("{}: case {ci} output {k}: {e}", model.display()));
        }
        ran.cases += 1;
    }
    ran
}

/// Does `haystack` contain the first 64 bytes of `needle` (or all of it when shorter)?
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let n = &needle[..needle.len().min(64)];
    haystack.windows(n.len()).any(|w| w == n)
}

/// A parameter distinctive enough to search a binary for: its first 64 bytes hold at least 16
/// different values (all-zero biases, say, occur in any program image by chance).
pub fn distinctive(data: &[u8]) -> bool {
    data.len() >= 64 && data[..64].iter().collect::<std::collections::HashSet<_>>().len() >= 16
}
