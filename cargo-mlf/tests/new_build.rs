//! `cargo mlf new` → `cargo mlf build` → run, as a new user does it: crates are created in a
//! temporary folder from the host template (the firmware and k210 templates run under QEMU:
//! `device_templates.rs`), built with `cargo mlf build` (into one shared target folder under
//! the workspace's `target/`, so dependencies build once), and run.
//! Budgets below a model's need fail the build (through `cargo mlf build` and through a plain
//! `cargo build`) naming the model and both numbers; the report's figures agree between the
//! human and the JSON forms and with the `ARENA_BYTES` of the generated module.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    mlf_fixtures::workspace_root()
}

/// The target folder every generated crate builds into.
fn shared_target() -> PathBuf {
    root().join("target/mlf-new-tests")
}

fn cargo_mlf(args: &[&str], extra: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).arg("mlf").args(args).args(extra).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `cargo mlf new DIR --mlf-path <this checkout> [more]` (the crate is named after `DIR`).
fn new_crate(dir: &Path, more: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "new"])
        .arg(dir)
        .args(more)
        .arg("--mlf-path")
        .arg(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo mlf new {}: {}", dir.display(), text(&out.stderr));
    assert!(dir.join("Cargo.toml").is_file() && dir.join("build.rs").is_file() && dir.join("src/main.rs").is_file());
}

/// `cargo mlf build --manifest-path DIR/Cargo.toml --target-dir <shared> [more]`.
fn mlf_build(dir: &Path, more: &[&str]) -> Output {
    let manifest = dir.join("Cargo.toml");
    let target = shared_target();
    let mut args: Vec<&Path> = vec![Path::new("--manifest-path"), &manifest, Path::new("--target-dir"), &target];
    args.extend(more.iter().map(Path::new));
    cargo_mlf(&["build"], &args)
}

/// The exact byte count on the human report's line starting with `label`.
fn figure(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(label) && l.trim_start()[label.len()..].starts_with("  "))
        .unwrap_or_else(|| panic!("no line {label:?} in:\n{report}"));
    line.trim_start()[label.len()..].split_whitespace().next().unwrap().parse().unwrap()
}

/// The JSON lines with `reason`.
fn json_lines(stdout: &str, reason: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["reason"] == reason)
        .collect()
}

/// Rewrites the crate's model entry with `budget` lines (`ram = "100 B"`).
fn set_model_budget(dir: &Path, budget: &str) {
    let path = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    let start = toml.find("[[package.metadata.mlf.models]]").expect("the model entry");
    let end = toml.find("# A crate of its own").expect("the end of the entry");
    let entry =
        "[[package.metadata.mlf.models]]\npath = \"models/digits.tar\"\nname = \"digits\"\nparams = \"embedded\"\n";
    std::fs::write(&path, format!("{}{entry}{budget}\n\n{}", &toml[..start], &toml[end..])).unwrap();
}

#[test]
fn host_crate_builds_runs_reports_and_keeps_budgets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("digits-host");
    let model = root().join("examples/digits/model/digits.tar");
    new_crate(&dir, &["--model", model.to_str().unwrap()]);
    assert!(dir.join("models/digits.tar").is_file());

    // new → build: the human report, then cargo build.
    let out = mlf_build(&dir, &["--plan-svg", tmp.path().join("plans").to_str().unwrap()]);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("model digits_host (digits.tar, graph executor"), "{report}");
    let (ram, arena, c_data, flash, code, params) = (
        figure(&report, "static RAM"),
        figure(&report, "arena"),
        figure(&report, "C data"),
        figure(&report, "flash"),
        figure(&report, "code"),
        figure(&report, "parameters"),
    );
    assert_eq!(arena, 176);
    assert_eq!(ram, arena + c_data);
    assert_eq!(params, 9640);
    assert!(code > 0 && flash >= code + params, "{report}");
    // The build compiled the C: its picture stands the stack a run needs beside the arena.
    let svg = std::fs::read_to_string(tmp.path().join("plans/digits-host-digits_host.svg")).unwrap();
    // cargo builds the dev profile here: mlf's frames are counted unoptimised, as the module's
    // STACK_BYTES counts them with debug assertions.
    assert!(svg.contains("stack, C frames: ") && svg.contains("stack, mlf: 3072 bytes"), "{svg}");
    let stack = figure(&report, "stack");
    assert!(report.contains("(with debug assertions, as in the dev profile)"), "{report}");

    // → run: on a digit from the reference vectors (a 2), and on zeros.
    let exe = shared_target().join("debug").join(format!("digits-host{}", std::env::consts::EXE_SUFFIX));
    let input = root().join("examples/digits/model/vectors/case0_in_pixels.bin");
    let run = Command::new(&exe).arg(format!("pixels={}", input.display())).output().unwrap();
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(stdout.contains("output output [1, 10]: [") && stdout.contains("output output argmax: 2\n"), "{stdout}");
    // The report's arena is the static arena the generated module allocates, and its stack the
    // module's STACK_BYTES in this (dev) build.
    assert!(stdout.contains(&format!("arena {arena} bytes of static RAM, stack {stack} bytes")), "{stdout}");
    // The same digit as a NumPy file (the host template reads `.npy` as well as raw bytes); a
    // `.npy` of another type is refused, naming both types.
    let npy = |descr: &str, data: &[u8]| {
        let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1, 64), }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend_from_slice(&(header.len() as u16).to_le_bytes());
        file.extend_from_slice(header.as_bytes());
        file.extend_from_slice(data);
        file
    };
    let pixels = std::fs::read(&input).unwrap();
    let good = tmp.path().join("pixels.npy");
    std::fs::write(&good, npy("<f4", &pixels)).unwrap();
    let run = Command::new(&exe).arg(format!("pixels={}", good.display())).output().unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(text(&run.stdout), stdout, "a .npy input gives what its raw bytes give");
    let wrong = tmp.path().join("pixels-f64.npy");
    std::fs::write(&wrong, npy("<f8", &[0u8; 512])).unwrap();
    let run = Command::new(&exe).arg(format!("pixels={}", wrong.display())).output().unwrap();
    let err = text(&run.stderr);
    assert!(!run.status.success() && err.contains("a .npy file of type <f8, but the model takes <f4 (f32)"), "{err}");
    let zeros = Command::new(&exe).output().unwrap();
    assert!(zeros.status.success() && text(&zeros.stdout).contains("output output argmax: "));

    // JSON lines carry the same figures.
    let out = mlf_build(&dir, &["--check-only", "--message-format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let models = json_lines(&text(&out.stdout), "mlf-model-report");
    assert_eq!(models.len(), 1);
    let m = &models[0];
    assert_eq!(m["model"], "digits_host");
    assert_eq!(m["package"], "digits-host");
    assert_eq!(m["ram"]["total"], ram);
    assert_eq!(m["ram"]["arena"], arena);
    assert_eq!(m["ram"]["c_data"], c_data);
    assert_eq!(m["flash"]["total"], flash);
    assert_eq!(m["flash"]["code"], code);
    assert_eq!(m["flash"]["params"], params);
    assert_eq!(m["within_budget"], true);
    let pkg = json_lines(&text(&out.stdout), "mlf-package-report");
    assert_eq!(pkg[0]["ram"], ram);
    assert_eq!(pkg[0]["flash"], flash);

    // A RAM budget below the need fails, naming the model and both numbers, before cargo runs.
    set_model_budget(&dir, "ram = \"100 B\"");
    let out = mlf_build(&dir, &[]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!(
            "model digits needs {ram} bytes of static RAM, over the budget of 100 bytes by {} bytes",
            ram - 100
        )),
        "{err}"
    );
    assert!(err.contains("package.metadata.mlf.models[0]") && err.contains("not running cargo build"), "{err}");
    let out = mlf_build(&dir, &["--check-only", "--message-format", "json"]);
    assert!(!out.status.success());
    assert_eq!(json_lines(&text(&out.stdout), "mlf-model-report")[0]["within_budget"], false);
    let errors = json_lines(&text(&out.stdout), "mlf-error");
    assert_eq!(errors.len(), 1);
    // For editors: the file the error names, and where the model's entry stands in Cargo.toml.
    let e = &errors[0];
    assert!(e["file"].as_str().is_some_and(|f| f.ends_with("models/digits.tar")), "{e}");
    let span = &e["spans"][0];
    assert!(span["file_name"].as_str().is_some_and(|f| f.ends_with("Cargo.toml")), "{e}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let line = manifest.lines().nth(span["line_start"].as_u64().unwrap() as usize - 1).unwrap();
    assert!(line.contains("models/digits.tar") && span["is_primary"] == true, "{line}\n{e}");
    // A plain `cargo build` enforces it too, through build.rs.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .arg("build")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(shared_target())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("model digits needs {ram} bytes")) && err.contains("over the budget of 100 bytes"),
        "{err}"
    );

    // Flash too; and budgets that suffice pass.
    set_model_budget(&dir, "flash = \"4 KiB\"");
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(&format!("model digits needs {flash} bytes"))
            && err.contains("of flash, over the budget of 4096 bytes"),
        "{err}"
    );
    set_model_budget(&dir, "ram = \"1 KiB\"\nflash = \"64 KiB\"");
    let out = mlf_build(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let budget = format!(
        "  budget                ram 1024 bytes (1.0 KiB), {:.0}% used; flash 65536 bytes (64.0 KiB), {:.0}% used\n",
        ram as f64 * 100.0 / 1024.0,
        flash as f64 * 100.0 / 65536.0
    );
    assert!(text(&out.stderr).contains(&budget), "the report shows the budget: {budget:?}\n{}", text(&out.stderr));

    // A crate budget below the sum fails, naming the crate and its model.
    let path = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).unwrap().replace("# ram = \"256 KiB\"", "ram = \"128 B\"");
    std::fs::write(&path, toml).unwrap();
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains(&format!("crate digits-host (model digits) needs {ram} bytes")),
        "{err}"
    );
}

#[test]
fn kws_host_crate_reproduces_its_reference_output() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("kws_host_crate_reproduces_its_reference_output") else { return };
    let fixture = fx.join("mlf/kws-int8-graph");
    let manifest = mlf_fixtures::Manifest::read(&fixture).expect("vectors");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kws-host");
    new_crate(&dir, &["--model", fixture.join("model.tar").to_str().unwrap()]);
    let out = mlf_build(&dir, &[]);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert_eq!(figure(&report, "arena"), 72192, "{report}"); // in-place operators: the tensor-level bound is 88192
    eprintln!("{report}");
    let case = &manifest.cases[0];
    let exe = shared_target().join("debug").join(format!("kws-host{}", std::env::consts::EXE_SUFFIX));
    let input = fixture.join("vectors").join(case.inputs[0].file.as_ref().unwrap());
    let run = Command::new(&exe).arg(&input).output().unwrap();
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let want = std::fs::read(fixture.join("vectors").join(case.outputs[0].file.as_ref().unwrap())).unwrap();
    let want: Vec<i8> = want.iter().map(|&b| b as i8).collect();
    let best = (0..want.len()).fold(0, |b, i| if want[i] > want[b] { i } else { b });
    assert!(stdout.contains(&format!("argmax: {best}\n")), "expected argmax {best}: {stdout}");

    // A misspelt input name gets the closest one, as `cargo mlf run` does.
    let run = Command::new(&exe).arg(format!("input_l={}", input.display())).output().unwrap();
    let err = text(&run.stderr);
    assert!(
        !run.status.success() && err.contains("the model has no input `input_l`; did you mean `input_1`?"),
        "{err}"
    );
    // A float .npy for the int8 input: the quantization hint, as `cargo mlf run` gives it.
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 49, 10, 1), }";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{header:<117}\n");
    npy.extend((padded.len() as u16).to_le_bytes());
    npy.extend(padded.as_bytes());
    npy.extend(std::iter::repeat_n(0u8, 490 * 4));
    let float_npy = tmp.path().join("float.npy");
    std::fs::write(&float_npy, npy).unwrap();
    let run = Command::new(&exe).arg(&float_npy).output().unwrap();
    let err = text(&run.stderr);
    assert!(
        !run.status.success()
            && err.contains("a quantized i8 input takes quantized values: divide by the input's scale"),
        "{err}"
    );
    // A .npz archive is refused by name.
    let npz = tmp.path().join("inputs.npz");
    std::fs::write(&npz, b"PK\x03\x04rest of a zip").unwrap();
    let run = Command::new(&exe).arg(&npz).output().unwrap();
    assert!(text(&run.stderr).contains("a NumPy .npz archive"), "{}", text(&run.stderr));
}

#[test]
fn new_refuses_a_bad_name_an_existing_folder_and_a_missing_model() {
    let tmp = tempfile::tempdir().unwrap();
    let out = cargo_mlf(&["new"], &[&tmp.path().join("1abc")]);
    assert!(!out.status.success() && text(&out.stderr).contains("starts with a digit"), "{}", text(&out.stderr));
    std::fs::write(tmp.path().join("x"), "").unwrap();
    let out = cargo_mlf(&["new"], &[tmp.path(), Path::new("--name"), Path::new("abc")]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("error: the folder exists and is not empty\n"), "{err}");
    assert!(err.contains("help: give another folder, or run `cargo mlf new .` inside it"), "{err}");
    let out = cargo_mlf(&["new", "--model", "/nonexistent/m.tar"], &[&tmp.path().join("abc")]);
    assert!(!out.status.success() && text(&out.stderr).contains("/nonexistent/m.tar"));
    assert!(!tmp.path().join("abc").exists(), "nothing is written when the model cannot be read");
}

/// The positional argument is the folder, as with `cargo new`: the crate is named after its
/// last component, or `--name`; names cargo refuses are refused before anything is written,
/// naming the cause and `--name`; the model's module is named after the crate, not the file.
#[test]
fn new_takes_a_folder_and_names_crate_and_module_as_cargo_does() {
    let tmp = tempfile::tempdir().unwrap();
    for (folder, cause) in [
        ("test", "built into Rust"),
        ("core", "built into Rust"),
        ("proc-macro", "built into Rust"),
        ("fn", "Rust keyword"),
        ("deps", "folder of its build output"),
        ("build", "folder of its build output"),
        ("nul", "device name on Windows"),
        ("com1", "device name on Windows"),
        ("a.b", "'.' is not allowed"),
        ("-x", "starts with `-`"),
    ] {
        let dir = tmp.path().join("sub").join(folder);
        let out = cargo_mlf(&["new"], &[&dir]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{folder}: {err}");
        assert!(
            err.contains(&format!("`{folder}` cannot be a package name: ")) && err.contains(cause),
            "{folder}: {err}"
        );
        assert!(err.contains("use --name NAME"), "{folder}: {err}");
        assert!(!tmp.path().join("sub").exists(), "{folder}: nothing is written");
    }
    // --name chooses the crate's name for a folder whose name cargo would refuse.
    let digits = root().join("examples/digits/model/digits.tar");
    let dir = tmp.path().join("models").join("test");
    let out = cargo_mlf(&["new", "--name", "kws-demo", "--model", digits.to_str().unwrap()], &[&dir]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(toml.contains("name = \"kws-demo\"") && toml.contains("name = \"kws_demo\""), "{toml}");
    let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(main.contains("include_model!(\"models/digits.tar\", name = kws_demo)"), "{main}");
    assert!(main.contains("kws_demo::Model::take()") && !main.contains("digits::"), "{main}");
    // `.` is the current folder, named as the folder is.
    let here = tmp.path().join("here");
    std::fs::create_dir(&here).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "new", "."]).current_dir(&here).output();
    let out = out.unwrap();
    assert!(out.status.success() && text(&out.stderr).contains("crate `here`"), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(here.join("Cargo.toml")).unwrap().contains("name = \"here\""));
    // A model file called `model.tar` (as TVM names them) gives the module the crate's name.
    let model = tmp.path().join("model.tar");
    std::fs::copy(&digits, &model).unwrap();
    let dir = tmp.path().join("kws");
    let out = cargo_mlf(&["new", "--model", model.to_str().unwrap()], &[&dir]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("crate `kws`") && text(&out.stderr).contains("(module `kws`)"));
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(toml.contains("path = \"models/model.tar\"\nname = \"kws\"\n"), "{toml}");
    // --module still picks the MLF module of the archive; it does not name the Rust module.
    let dir = tmp.path().join("picked");
    let out = cargo_mlf(&["new", "--module", "default", "--model", digits.to_str().unwrap()], &[&dir]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(toml.contains("name = \"picked\"\nmodule = \"default\"\n"), "{toml}");
    let out = cargo_mlf(&["new", "--module", "other", "--model", digits.to_str().unwrap()], &[&tmp.path().join("o")]);
    assert!(!out.status.success() && text(&out.stderr).contains("other"), "{}", text(&out.stderr));
}

/// A crate `name` in `dir` with an empty `main` and `table` after its `[package]` section.
fn bare_crate(dir: &Path, name: &str, table: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n{table}[workspace]\n"),
    )
    .unwrap();
}

#[test]
fn build_reports_a_bad_table_with_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad");
    bare_crate(
        &dir,
        "bad",
        "[package.metadata.mlf]\n[[package.metadata.mlf.models]]\npath = \"m.tar\"\nram = \"64 KB\"\n",
    );
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    // In cargo's shape: what, where (the key's line and column), what to do.
    assert!(err.contains("error: \"64 KB\": the unit \"KB\" is ambiguous\n"), "{err}");
    assert!(err.contains("bad/Cargo.toml:8:1 (package.metadata.mlf.models[0].ram)\n"), "{err}");
    assert!(err.contains("\nhelp: write KiB/MiB/GiB (powers of 1024) or kB/MB/GB (powers of 1000)\n"), "{err}");
    // No colour when stderr is not a terminal; colour with --color always, none with NO_COLOR.
    assert!(!err.contains('\u{1b}'), "{err}");
    let coloured = text(&mlf_build(&dir, &["--check-only", "--color", "always"]).stderr);
    assert!(coloured.contains("\u{1b}[1m\u{1b}[91merror\u{1b}[0m"), "{coloured:?}");
    let manifest = dir.join("Cargo.toml");
    let plain = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "build", "--check-only", "--manifest-path"])
        .arg(&manifest)
        .env("NO_COLOR", "1")
        .env("CLICOLOR_FORCE", "0")
        .output()
        .unwrap();
    assert!(!text(&plain.stderr).contains('\u{1b}'), "{}", text(&plain.stderr));
    // A missing model file is named, with where the entry stands.
    bare_crate(&dir, "bad", "[[package.metadata.mlf.models]]\npath = \"m.tar\"\n");
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("bad/m.tar\n"), "{err}");
    assert!(err.contains("note: the model is listed at ") && err.contains("bad/Cargo.toml:6:9\n"), "{err}");
}

/// Without `--target`, the models are checked for `$CARGO_BUILD_TARGET` (what cargo builds for),
/// and `--target` wins over it.
#[test]
fn build_checks_for_cargo_build_target() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("envtarget");
    bare_crate(&dir, "envtarget", "[[package.metadata.mlf.models]]\npath = \"m.tar\"\n");
    let manifest = dir.join("Cargo.toml");
    let check = |more: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
            .args(["mlf", "build", "--check-only", "--manifest-path"])
            .arg(&manifest)
            .args(more)
            .env("CARGO_BUILD_TARGET", "thumbv7em-none-eabihf")
            .output()
            .unwrap();
        text(&out.stderr)
    };
    let err = check(&[]);
    assert!(err.contains("Checking 1 model of envtarget for thumbv7em-none-eabihf"), "{err}");
    let err = check(&["--target", "riscv32imac-unknown-none-elf"]);
    assert!(err.contains("Checking 1 model of envtarget for riscv32imac-unknown-none-elf"), "{err}");
}

#[test]
fn kmodel_host_crate_needs_no_build_step_and_reports_its_arena() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("kmodel_host_crate_needs_no_build_step_and_reports_its_arena") else {
        return;
    };
    let fixture = fx.join("kmodel/v3-iris");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("iris-host");
    new_crate(&dir, &["--model", fixture.join("iris.kmodel").to_str().unwrap()]);
    let out = mlf_build(&dir, &[]);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("model iris_host (iris.kmodel, kmodel executor")
            && report.contains("kmodel: not planned by the build step"),
        "{report}"
    );
    let arena = figure(&report, "arena");
    let exe = shared_target().join("debug").join(format!("iris-host{}", std::env::consts::EXE_SUFFIX));
    let run = Command::new(&exe).arg(fixture.join("input_features_f32le.bin")).output().unwrap();
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    // The description's figure is the module's ARENA_BYTES.
    assert!(stdout.contains(&format!("arena {arena} bytes of static RAM")), "{arena}: {stdout}");
    let want: Vec<f32> = std::fs::read(fixture.join("expected_output_f32le.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let best = (0..want.len()).fold(0, |b, i| if want[i] > want[b] { i } else { b });
    assert!(stdout.contains(&format!("argmax: {best}\n")), "expected argmax {best}: {stdout}");
}

#[test]
fn external_placements_report_parameter_ram_and_external_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("digits-ext");
    new_crate(&dir, &[]);
    let path = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    let mut resident_ram = 0;
    for placement in ["resident", "streamed", "lazy"] {
        std::fs::write(&path, toml.replace("params = \"embedded\"", &format!("params = \"{placement}\""))).unwrap();
        let out = mlf_build(&dir, &["--check-only", "--message-format", "json"]);
        assert!(out.status.success(), "{placement}: {}", text(&out.stderr));
        let m = &json_lines(&text(&out.stdout), "mlf-model-report")[0];
        assert_eq!(m["external_param_bytes"], 9640, "{placement}: {m}");
        assert_eq!(m["flash"]["params"], 0, "{placement}: {m}");
        let param_ram = m["ram"]["params"].as_u64().unwrap();
        assert!(param_ram > 0 && param_ram <= 9640 + 64, "{placement}: {m}");
        match placement {
            "resident" => resident_ram = param_ram,
            // Lazy loading fills the resident region: the same RAM.
            "lazy" => assert_eq!(param_ram, resident_ram, "{m}"),
            _ => {}
        }
        assert_eq!(
            m["ram"]["total"].as_u64().unwrap(),
            m["ram"]["arena"].as_u64().unwrap() + param_ram + m["ram"]["c_data"].as_u64().unwrap()
        );
    }
}

/// Replaces the crate's `[[package.metadata.mlf.models]]` entries with `entries`.
fn set_model_entries(dir: &Path, entries: &str) {
    let path = dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    let start = toml.find("[[package.metadata.mlf.models]]").expect("the model entry");
    let end = toml.find("# A crate of its own").expect("the end of the entry");
    std::fs::write(&path, format!("{}{entries}\n{}", &toml[..start], &toml[end..])).unwrap();
}

/// A model listed twice, or two entries generating one module, are refused by `cargo mlf build`
/// and by the template's `build.rs` (`compile_listed_or_exit`) alike, naming the file and both
/// entries; the name clash says which key renames one.
#[test]
fn a_model_listed_twice_or_one_module_name_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("twice");
    new_crate(&dir, &[]);
    let cargo_toml = dir.join("Cargo.toml");
    let cargo_build = || {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(&cargo)
            .arg("build")
            .arg("--manifest-path")
            .arg(&cargo_toml)
            .arg("--target-dir")
            .arg(shared_target())
            .output()
            .unwrap();
        assert!(!out.status.success());
        text(&out.stderr)
    };
    let entry = |path: &str, more: &str| format!("[[package.metadata.mlf.models]]\npath = \"{path}\"\n{more}\n");

    // The same model, spelled two ways: its RAM would be counted twice.
    set_model_entries(
        &dir,
        &(entry("models/digits.tar", "") + &entry("./models/../models/digits.tar", "name = \"b\"")),
    );
    // In cargo's shape from `cargo mlf build`: what, then where (the entry's line and column).
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("error: lists the same model as package.metadata.mlf.models[0] (./models/../models/digits.tar); its memory would be counted twice: remove one of the two entries\n"), "{err}");
    assert!(
        err.contains(&format!("  --> {}:", cargo_toml.display()))
            && err.contains(" (package.metadata.mlf.models[1])\n"),
        "{err}"
    );
    let err = cargo_build();
    assert!(err.contains("package.metadata.mlf.models[1]: lists the same model as"), "{err}");

    // Two copies of one archive called `model.tar` both generate the module `model`.
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.join("models").join(sub)).unwrap();
        std::fs::copy(dir.join("models/digits.tar"), dir.join("models").join(sub).join("model.tar")).unwrap();
    }
    set_model_entries(&dir, &(entry("models/a/model.tar", "") + &entry("models/b/model.tar", "")));
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("error: models/b/model.tar generates the module `model`, as package.metadata.mlf.models[0] (models/a/model.tar) does\n"), "{err}");
    assert!(err.contains("\nhelp: give one of the two entries another module name with its `name` key"), "{err}");
    let err = cargo_build();
    assert!(err.contains("models/b/model.tar generates the module `model`") && err.contains("`name` key"), "{err}");
    // Named apart, they build.
    set_model_entries(&dir, &(entry("models/a/model.tar", "") + &entry("models/b/model.tar", "name = \"model_b\"")));
    let out = mlf_build(&dir, &["--check-only"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// As `cargo new`/`cargo init`: `new .` makes the crate in the current folder (files already
/// there are kept, none is overwritten, no `cd .` is suggested); a `.gitignore`, and a git
/// repository unless the folder is inside one (`--vcs none`: neither); files get the user's
/// umask. Without `--mlf-path`, a cargo-mlf built from a checkout makes crates that depend on
/// that checkout by path, and says so.
#[test]
fn new_in_place_with_git_and_the_checkout_it_was_built_from() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    std::fs::create_dir(&here).unwrap();
    std::fs::write(here.join("notes.txt"), "mine\n").unwrap();
    let new_here =
        || Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "new", "."]).current_dir(&here).output();
    let out = new_here().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Next: cargo mlf build && cargo run") && !err.contains("cd ."), "{err}");
    let root = root().canonicalize().unwrap();
    assert!(
        err.contains(&format!(
            "note: the crate depends on the mlf crates of {} by path: cargo-mlf was built from that checkout",
            root.display()
        )),
        "{err}"
    );
    let toml = std::fs::read_to_string(here.join("Cargo.toml")).unwrap();
    assert!(toml.contains(&format!("path = {:?}", root.join("mlf-runtime").display().to_string())), "{toml}");
    assert_eq!(std::fs::read_to_string(here.join("notes.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(here.join(".gitignore")).unwrap(), "/target\n");
    assert!(here.join(".git").is_dir() && err.contains("note: initialised a git repository"), "{err}");
    let reference = tmp.path().join("reference");
    std::fs::write(&reference, "").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for f in ["Cargo.toml", "build.rs", "src/main.rs", ".gitignore", "README.md"] {
        assert_eq!(mode(&here.join(f)), mode(&reference), "{f}: the umask's permissions");
    }
    // Again: the crate is there, nothing is overwritten.
    let out = new_here().unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("error: Cargo.toml exists already"), "{err}");
    // Inside a repository: a .gitignore, no repository of its own.
    let out = cargo_mlf(&["new"], &[&here.join("inner")]);
    assert!(out.status.success() && text(&out.stderr).contains("inside an existing git repository"));
    assert!(here.join("inner/.gitignore").is_file() && !here.join("inner/.git").exists());
    let out = cargo_mlf(&["new", "--vcs", "none"], &[&tmp.path().join("plain")]);
    assert!(
        out.status.success()
            && !tmp.path().join("plain/.gitignore").exists()
            && !tmp.path().join("plain/.git").exists()
    );
}

/// A crate whose build.rs opens its model with `Model::open` (the README's first recipe) and
/// lists nothing: `cargo mlf build` says which models it does not see, why, and how to list them.
#[test]
fn build_names_models_that_build_rs_opens_without_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("opened");
    bare_crate(&dir, "opened", "");
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    mlf_build::Model::open(\"models/digits.tar\").compile_or_exit();\n}\n",
    )
    .unwrap();
    let out = mlf_build(&dir, &["--check-only"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: opened's build.rs opens \"models/digits.tar\" with Model::open, which cargo mlf build does not check or report\n"),
        "{err}"
    );
    assert!(
        err.contains("help: list it in Cargo.toml ([[package.metadata.mlf.models]] path = \"models/digits.tar\")"),
        "{err}"
    );
    assert!(err.contains("note: cargo mlf build reads [package.metadata.mlf]; it does not run build scripts"), "{err}");
}
