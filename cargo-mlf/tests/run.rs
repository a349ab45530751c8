//! `cargo mlf run` reproduces the reference vectors of every runnable MLF fixture: each model is
//! built as a user's crate is (generated build.rs + `include_model!`) and run on raw inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::{Manifest, compare, fixtures_or_skip, mlf_fixtures};

mod common;

use common::{contains, distinctive, run_cases, run_cases_with, work_dir};

#[test]
fn digits_from_the_repository() {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    assert_eq!(run_cases(&dir.join("digits.tar"), &dir), 10);
}

/// `--release` builds the program with cargo's release profile, and it still reproduces the vectors.
#[test]
fn release_program_reproduces_the_digits_vectors() {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    let ran = run_cases_with(&dir.join("digits.tar"), &dir, &["--release".as_ref()]);
    assert_eq!(ran.cases, 10);
    assert!(ran.exe.components().any(|c| c.as_os_str() == "release"), "{}", ran.exe.display());
    let debug = run_cases_with(&dir.join("digits.tar"), &dir, &[]).exe;
    assert!(debug.components().any(|c| c.as_os_str() == "debug"), "{}", debug.display());
}

#[test]
fn every_runnable_mlf_fixture() {
    let Some(root) = fixtures_or_skip("every_runnable_mlf_fixture") else { return };
    let mut checked = Vec::new();
    for fx in mlf_fixtures(&root) {
        if Manifest::read(&fx.dir).is_none() || fx.dir.join("EXPECT.json").exists() {
            continue;
        }
        let n = run_cases(&fx.model, &fx.dir);
        checked.push(format!("{} ({n} cases)", fx.name));
    }
    eprintln!("cargo mlf run reproduced: {}", checked.join(", "));
    assert!(checked.len() >= 15, "{checked:?}");
}

#[test]
fn every_kmodel_fixture_with_vectors() {
    let Some(root) = fixtures_or_skip("every_kmodel_fixture_with_vectors") else { return };
    let mut checked = Vec::new();
    for e in std::fs::read_dir(root.join("kmodel")).unwrap().flatten() {
        let dir = e.path();
        if Manifest::read(&dir).is_none() {
            continue;
        }
        // The vectors belong to the folder's main model (the beta compile, not an alpha one).
        let mut models: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kmodel"))
            .collect();
        models.sort();
        let model = models.iter().find(|p| !p.to_string_lossy().contains("alpha")).unwrap();
        let n = run_cases(model, &dir);
        checked.push(format!("{} ({n} cases)", dir.file_name().unwrap().to_string_lossy()));
    }
    eprintln!("cargo mlf run reproduced kmodels: {}", checked.join(", "));
    assert!(checked.len() >= 4, "{checked:?}");
}

/// External parameters through the CLI: a fresh split (resident), a packed archive made by
/// `split` + `pack` (streamed), the split folder (lazy); the external program image holds no
/// parameter byte, the embedded one does (the control).
#[test]
fn external_parameters_leave_the_program_image() {
    let root = mlf_fixtures::workspace_root();
    let dir = root.join("examples/digits/model");
    let model = dir.join("digits.tar");
    let bin = env!("CARGO_BIN_EXE_cargo-mlf");
    let t = tempfile::tempdir().unwrap();
    let split = t.path().join("split");
    let packed = t.path().join("digits-params.tar");
    // `--params` as for `run` (`--placement` is another name for it).
    let split_cmd =
        Command::new(bin).args(["mlf", "split", "--params", "resident"]).arg(&model).arg("-o").arg(&split).status();
    assert!(split_cmd.unwrap().success());
    assert!(split.join("configure.json").is_file() && split.join("code").is_dir());
    assert!(Command::new(bin).args(["mlf", "pack"]).arg(&split).arg("-o").arg(&packed).status().unwrap().success());
    let inspect = Command::new(bin).args(["mlf", "inspect", "--json"]).arg(&packed).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(
        (report["format"].as_str(), report["count"].as_u64(), report["bytes"].as_u64()),
        (Some("mlf-params"), Some(4), Some(9640))
    );

    let embedded = run_cases_with(&model, &dir, &[]).exe;
    let resident = run_cases_with(&model, &dir, &["--params".as_ref(), "resident".as_ref()]).exe;
    let streamed = run_cases_with(
        &model,
        &dir,
        &["--params".as_ref(), "streamed".as_ref(), "--from".as_ref(), packed.as_os_str()],
    )
    .exe;
    let lazy =
        run_cases_with(&model, &dir, &["--params".as_ref(), "lazy".as_ref(), "--from".as_ref(), split.as_os_str()]).exe;

    let desc = mlf_build::open(&model).unwrap();
    let embedded_image = std::fs::read(&embedded).unwrap();
    assert!(desc.params.iter().any(|p| distinctive(&p.data)), "no distinctive parameter to probe");
    for exe in [&resident, &streamed, &lazy] {
        let image = std::fs::read(exe).unwrap();
        for p in desc.params.iter().filter(|p| distinctive(&p.data)) {
            assert!(contains(&embedded_image, &p.data), "control: the embedded program holds {}", p.name);
            assert!(!contains(&image, &p.data), "{}: parameter {} is in the program image", exe.display(), p.name);
        }
    }
    eprintln!(
        "program image: embedded {} bytes, resident {} bytes, streamed {} bytes, lazy {} bytes",
        embedded_image.len(),
        std::fs::metadata(&resident).unwrap().len(),
        std::fs::metadata(&streamed).unwrap().len(),
        std::fs::metadata(&lazy).unwrap().len()
    );
}

/// The same for a shared fixture of each kind: a graph model with separate parameters, an AOT
/// model whose USMP constant pool is taken out of the C, AOT and graph models whose per-operator
/// constant arrays are, and a TVM 0.8 graph model whose linked parameters are; each in the
/// placement listed and lazily loaded.
#[test]
fn external_parameters_of_shared_fixtures() {
    let Some(root) = fixtures_or_skip("external_parameters_of_shared_fixtures") else { return };
    for (name, placement, probe) in [
        ("kws-int8-graph", "resident", "params"),
        ("digits-mlp-aot-usmp", "streamed", "files"),
        ("digits-mlp-aot-c", "streamed", "files"),
        ("kws-int8-aot-c", "resident", "files"),
        ("digits-mlp-graph-linked", "streamed", "files"),
        ("arduino-demos-kws-yesno-graph-v4", "resident", "params"),
    ] {
        let dir = root.join("mlf").join(name);
        let model = dir.join("model.tar");
        let embedded = run_cases_with(&model, &dir, &[]);
        let external = run_cases_with(&model, &dir, &["--params".as_ref(), placement.as_ref()]);
        let split = external.params.expect("cargo mlf run names the split it read");
        // Lazily loaded from the same split: the reference vectors again.
        let lazy =
            run_cases_with(&model, &dir, &["--params".as_ref(), "lazy".as_ref(), "--from".as_ref(), split.as_os_str()]);
        let embedded = std::fs::read(embedded.exe).unwrap();
        let (external, lazy) = (std::fs::read(external.exe).unwrap(), std::fs::read(lazy.exe).unwrap());
        let probes: Vec<Vec<u8>> = if probe == "params" {
            mlf_build::open(&model)
                .unwrap()
                .params
                .iter()
                .filter(|p| distinctive(&p.data))
                .map(|p| p.data.to_vec())
                .collect()
        } else {
            // The pool's or the arrays' bytes as split out by the build step (every one: the
            // fixtures' arrays are all above the size that may stay in the C).
            std::fs::read_dir(split.join("params"))
                .unwrap()
                .flatten()
                .map(|f| std::fs::read(f.path()).unwrap())
                .collect()
        };
        let probes: Vec<Vec<u8>> = probes.into_iter().filter(|p| distinctive(p)).collect();
        assert!(!probes.is_empty(), "{name}: nothing distinctive to probe");
        for p in &probes {
            assert!(contains(&embedded, p), "{name}: control failed");
            assert!(!contains(&external, p), "{name}: parameter bytes in the external program image");
            assert!(!contains(&lazy, p), "{name}: parameter bytes in the lazy program image");
        }
    }
}

/// Writes `values` as a `.npy` file of `shape` in `order`.
fn write_npy(path: &Path, shape: &[u64], values: &[f32], order: npyz::Order) {
    use npyz::WriterBuilder;
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).order(order).writer(file).begin_nd().unwrap();
    w.extend(values.iter().copied()).unwrap();
    w.finish().unwrap();
}

/// `.npy` in, `.npy` out: a C-order input gives the reference output as `.npy` of the output's
/// dtype and shape; a Fortran-order input is refused, naming the file, before anything is built.
#[test]
fn npy_inputs_and_outputs_round_trip() {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    let model = dir.join("digits.tar");
    let manifest = Manifest::read(&dir).unwrap();
    let case = &manifest.cases[0];
    let (input, output) = (&case.inputs[0], &case.outputs[0]);
    let pixels: Vec<f32> = std::fs::read(dir.join("vectors").join(input.file.as_ref().unwrap()))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let t = tempfile::tempdir().unwrap();
    let run = |npy: &Path, out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
            .args(["mlf", "run"])
            .arg(&model)
            .arg("-i")
            .arg(format!("pixels={}", npy.display()))
            .arg("-o")
            .arg(out)
            .arg("--build-dir")
            .arg(work_dir())
            .output()
            .unwrap()
    };

    let c_order = t.path().join("pixels.npy");
    write_npy(&c_order, &input.shape, &pixels, npyz::Order::C);
    let out = t.path().join("out");
    let o = run(&c_order, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Named after the model's output, `output`.
    let bytes = std::fs::read(out.join("output.npy")).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!((npy.shape().to_vec(), npy.order()), (output.shape.clone(), npyz::Order::C));
    let got: Vec<u8> = npy.into_vec::<f32>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect();
    let want = std::fs::read(dir.join("vectors").join(output.file.as_ref().unwrap())).unwrap();
    compare(&output.dtype, &got, &want, case).unwrap();

    let fortran = t.path().join("pixels-fortran.npy");
    write_npy(&fortran, &input.shape, &pixels, npyz::Order::Fortran);
    let o = run(&fortran, &t.path().join("out-fortran"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&fortran.display().to_string()) && err.contains("Fortran-order .npy"), "{err}");
    assert!(!err.contains("building"), "the inputs are checked before the build: {err}");
}

#[test]
fn run_refuses_missing_and_unknown_inputs() {
    let model = mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar");
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "run"])
        .arg(&model)
        .args(["--input", "nope=x.bin"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("no input named \"nope\"") && msg.contains("pixels"), "{msg}");
    // A misspelling gets the closest name.
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "run"])
        .arg(&model)
        .args(["--input", "pixles=x.bin"])
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("no input named \"pixles\"; did you mean \"pixels\"?"), "{msg}");
    // A missing input: named once, with what to add.
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "run"]).arg(&model).output().unwrap();
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("missing input pixels (float32 [1, 64]): add --input pixels=FILE"), "{msg}");
    assert!(msg.contains("or --fill zeros|ones|random"), "{msg}");
    assert!(msg.contains("error: missing input"), "{msg}");
    assert!(msg.contains(&format!("--> {}", model.display())), "names the model: {msg}");
    assert_eq!(msg.matches("pixels").count(), 2, "{msg}");
}

/// `cargo mlf run digits.tar` with `extra` arguments, building in the tests' folder; returns
/// its stdout and stderr, having checked it succeeded.
fn run_digits(extra: &[&std::ffi::OsStr]) -> (String, String) {
    let model = mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar");
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "run"])
        .arg(&model)
        .arg("--build-dir")
        .arg(work_dir())
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "{stderr}");
    (stdout, stderr)
}

/// `--fill`: the inputs not given are filled with zeros, ones or seeded random values (the same
/// seed, the same outputs; another seed, others), and the outputs are named after the model's.
#[test]
fn fill_runs_a_model_without_input_files() {
    let t = tempfile::tempdir().unwrap();
    let out = |name: &str| t.path().join(name);
    let run = |args: &[&str], dir: &Path| {
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        a.extend(["-o".as_ref(), dir.as_os_str()]);
        let (_, stderr) = run_digits(&a);
        (stderr, std::fs::read(dir.join("output.npy")).unwrap())
    };
    let (stderr, zeros) = run(&["--fill", "zeros"], &out("zeros"));
    assert!(stderr.contains("input pixels (float32 [1, 64]) filled with zeros"), "{stderr}");
    let (_, ones) = run(&["--fill", "ones"], &out("ones"));
    let (stderr, random) = run(&["--fill", "random"], &out("random"));
    assert!(stderr.contains("filled with random values (seed 42)"), "{stderr}");
    let (_, again) = run(&["--fill", "random", "--seed", "42"], &out("again"));
    let (_, other) = run(&["--fill", "random", "--seed", "7"], &out("other"));
    assert_eq!(random, again, "the same seed gives the same inputs");
    assert!(zeros != ones && ones != random && random != other, "each fill gives other outputs");
    // A file given is read; only the others are filled.
    let input = mlf_fixtures::workspace_root().join("examples/digits/model/vectors/case0_in_pixels.bin");
    let (stderr, _) = run(&["--fill", "zeros", "-i", &format!("pixels={}", input.display())], &out("given"));
    assert!(!stderr.contains("filled with"), "{stderr}");
    // `--seed` alone is refused: it means nothing without `--fill random`.
    let o =
        Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "run", "x.tar", "--seed", "3"]).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--fill"));
}

/// `--print-top N` prints each output's N largest values with their indices, largest first,
/// matching the output file written.
#[test]
fn print_top_names_the_largest_outputs() {
    let t = tempfile::tempdir().unwrap();
    let input = mlf_fixtures::workspace_root().join("examples/digits/model/vectors/case0_in_pixels.bin");
    let (stdout, _) = run_digits(&[
        "-i".as_ref(),
        input.as_os_str(),
        "--print-top".as_ref(),
        "3".as_ref(),
        "--raw".as_ref(),
        "-o".as_ref(),
        t.path().as_os_str(),
    ]);
    let values: Vec<f32> = std::fs::read(t.path().join("output.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*b].total_cmp(&values[*a]));
    let line = stdout.trim().strip_prefix("output `output`: top 3: ").unwrap_or_else(|| panic!("{stdout}"));
    let shown: Vec<(usize, f32)> = line
        .split(", ")
        .map(|e| {
            let (i, v) = e.split_once(" (").unwrap();
            (i.parse().unwrap(), v.trim_end_matches(')').parse().unwrap())
        })
        .collect();
    let want: Vec<(usize, f32)> = order[..3].iter().map(|i| (*i, values[*i])).collect();
    assert_eq!(shown, want, "{stdout}");
    // `--print-top` alone prints and writes no file (into the current folder or anywhere).
    let cwd = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "run", "--print-top", "3", "-i"])
        .arg(&input)
        .arg(mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar"))
        .arg("--build-dir")
        .arg(work_dir())
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("output `output`: top 3: "));
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "no file in the current folder");
}

/// Without `--build-dir`, the runner is built under `$CARGO_TARGET_DIR/mlf-run`, else under the
/// user's cache folder — never in the current folder — and the build says what it builds where
/// (the build itself is cut short by a `cargo` that fails at once).
#[test]
fn the_build_folder_is_a_cache_not_the_current_folder() {
    let model = mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar");
    let t = tempfile::tempdir().unwrap();
    let (cwd, cache, targets) = (t.path().join("cwd"), t.path().join("cache"), t.path().join("targets"));
    std::fs::create_dir_all(&cwd).unwrap();
    let run = |target_dir: Option<&Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
        cmd.args(["mlf", "run", "--fill", "zeros"]).arg(&model).current_dir(&cwd);
        cmd.env("CARGO", "false").env("XDG_CACHE_HOME", &cache).env("HOME", t.path()).env_remove("CARGO_TARGET_DIR");
        if let Some(d) = target_dir {
            cmd.env("CARGO_TARGET_DIR", d);
        }
        let o = cmd.output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let stderr = run(None);
    let building = stderr.lines().find(|l| l.starts_with("building ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(building.contains(&format!(" in {}", cache.join("mlf/run").display())), "{building}");
    assert!(building.ends_with("(the first build takes about a minute)"), "{building}");
    let stderr = run(Some(&targets));
    assert!(stderr.contains(&format!(" in {}", targets.join("mlf-run").display())), "{stderr}");
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0, "nothing is written in the current folder");
}

/// An MLF whose kernels come as an object file (as LLVM codegen delivers them), calling the
/// runtime through a weak function-pointer slot like LLVM code built without system-lib: the
/// object is linked with its symbols isolated, the slot is filled, and the outputs are right.
#[test]
fn object_kernels_are_linked_and_their_slots_filled() {
    let root = mlf_fixtures::workspace_root();
    let src = root.join("examples/digits/model");
    let archive = mlf_build::__private::read::archive::Archive::open(src.join("digits.tar")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in archive.names() {
        if name == "codegen/host/src/default_lib1.c" {
            continue;
        }
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, archive.get(name).unwrap().as_slice()).unwrap();
    }
    // Kernels calling through a weak slot, compiled by the host's `cc` into an object for this computer.
    let mut c = archive.get("codegen/host/src/default_lib1.c").unwrap().as_str().unwrap().to_string();
    c = c.replacen(
        "#include <math.h>",
        "#include <math.h>\n__attribute__((weak)) int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = 0;\nstatic int mlf_probe(int task_id, TVMParallelGroupEnv* penv, void* cdata) { *(int*)cdata = penv->num_task + task_id; return 0; }",
        1,
    );
    let softmax = c.find("TVM_DLL int32_t tvmgen_default_fused_nn_softmax(").unwrap();
    let ret = softmax + c[softmax..].find("\n  return 0;\n}").unwrap();
    c.insert_str(
        ret,
        "\n  { int n = 0; if (__TVMBackendParallelLaunch(mlf_probe, &n, 4) != 0 || n != 1) { return -1; } }",
    );
    let c_path = dir.path().join("kernels.c");
    std::fs::write(&c_path, c).unwrap();
    let obj = dir.path().join("codegen/host/lib/default_lib1.o");
    std::fs::create_dir_all(obj.parent().unwrap()).unwrap();
    let cc = Command::new("cc")
        .args(["-c", "-O2", "-w", "-fPIC", "-I"])
        .arg(root.join("mlf-build/include"))
        .arg(&c_path)
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    std::fs::remove_file(&c_path).unwrap();
    // The model now has one C file (the registry) and one object.
    let desc = mlf_build::open(dir.path()).unwrap();
    assert_eq!((desc.code.sources.len(), desc.code.objects.len()), (1, 1));
    assert_eq!(run_cases(dir.path(), &src), 10);
}

/// `split` of a kmodel says why there is nothing to split and what to do, in cargo's shape
/// (not the build step's advice to remove a `Model::compile()` call a CLI user never wrote).
#[test]
fn split_of_a_kmodel_says_why_not() {
    let kmodel = mlf_fixtures::workspace_root().join("mlf-macros/tests/ui/files/fc.kmodel");
    let t = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "split"])
        .arg(&kmodel)
        .arg("-o")
        .arg(t.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.starts_with("error: a kmodel has no parameters to split: its weights are part of the file"), "{err}");
    assert!(err.contains("fc.kmodel\nhelp: split takes TVM models (MLF archives)"), "{err}");
    assert!(!err.contains("Model::compile"), "{err}");
}

/// `--module NAME` on an archive with several modules: the runner's build script builds that
/// module and its `main.rs` includes the same one (both modules of the two-module archive are the
/// digits MLP, so each reproduces the digits vectors).
#[test]
fn run_module_builds_and_runs_the_named_module_of_several() {
    let root = mlf_fixtures::workspace_root();
    let model = root.join("model-tests/models/two-modules.tar");
    let vectors = root.join("examples/digits/model");
    for module in ["other", "default"] {
        let ran = run_cases_with(&model, &vectors, &["--module".as_ref(), module.as_ref()]);
        assert_eq!(ran.cases, 10, "{module}");
    }
}

/// Issue 25, class 6: a model whose constants are all too small to take out splits with nothing
/// to take out and says how many bytes stayed in the code.
#[test]
fn split_with_nothing_to_take_out_says_what_stayed_in_the_code() {
    let t = tempfile::tempdir().unwrap();
    let mut m = mlf_fixtures::derived::digits_aot_c();
    mlf_fixtures::edit_member(&mut m, mlf_fixtures::derived::KERNELS, |text| {
        // Every constant array cut to 4 floats (16 bytes, under the threshold).
        text.lines()
            .map(|l| match (l.starts_with("static const float"), l.find('['), l.find(']')) {
                (true, Some(a), Some(b)) => format!("{}[4]{}", &l[..a], &l[b + 1..]),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    let model = t.path().join("small");
    mlf_fixtures::write_members(&model, &m);
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"))
        .args(["mlf", "split"])
        .arg(&model)
        .arg("-o")
        .arg(t.path().join("split"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("0 parameter files") && stderr.contains("nothing to take out: all 64 bytes"), "{stderr}");
}
