#![allow(dead_code)] // each test program uses a part
//! Shared by the tests and the `external` bench: `cargo mlf run` on a fixture's reference case,
//! and the paths it reports on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::Case;

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
