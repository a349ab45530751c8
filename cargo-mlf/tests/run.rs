//! `cargo mlf run` reproduces the reference vectors of every runnable MLF fixture: each model is
//! built as a user's crate is (generated build.rs + `include_model!`) and run on raw inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::{compare, fixtures_or_skip, mlf_fixtures, Manifest};

fn work_dir() -> PathBuf {
    mlf_fixtures::workspace_root().join("target/mlf-run-tests")
}

/// Runs every case of the manifest in `dir` through `cargo mlf run` and returns the number of
/// cases checked.
fn run_cases(model: &Path, dir: &Path) -> usize {
    let manifest = Manifest::read(dir).expect("manifest");
    let mut n = 0;
    for (ci, case) in manifest.cases.iter().enumerate() {
        let out = work_dir().join("out").join(format!("{}-{ci}", dir.file_name().unwrap().to_string_lossy()));
        let _ = std::fs::remove_dir_all(&out);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-mlf"));
        cmd.args(["mlf", "run"]).arg(model).arg("--raw").arg("--output-dir").arg(&out).arg("--work-dir").arg(work_dir());
        for (k, i) in case.inputs.iter().enumerate() {
            let file = dir.join("vectors").join(i.file.as_ref().unwrap());
            let name = i.name.clone().unwrap_or_else(|| format!("#{k}"));
            cmd.arg("--input").arg(format!("{name}={}", file.display()));
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}: {}", model.display(), String::from_utf8_lossy(&o.stderr));
        for (k, want) in case.outputs.iter().enumerate() {
            let got = std::fs::read(out.join(format!("output{k}.bin"))).unwrap();
            let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
            compare(&want.dtype, &got, &expected, case).unwrap_or_else(|e| panic!("{}: case {ci} output {k}: {e}", model.display()));
        }
        n += 1;
    }
    n
}

#[test]
fn digits_from_the_repository() {
    let dir = mlf_fixtures::workspace_root().join("examples/digits/model");
    assert_eq!(run_cases(&dir.join("digits.tar"), &dir), 10);
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
fn run_refuses_missing_and_unknown_inputs() {
    let model = mlf_fixtures::workspace_root().join("examples/digits/model/digits.tar");
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "run"]).arg(&model).args(["--input", "nope=x.bin"]).output().unwrap();
    assert!(!o.status.success());
    let msg = String::from_utf8_lossy(&o.stderr);
    assert!(msg.contains("no input named \"nope\"") && msg.contains("pixels"), "{msg}");
    let o = Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "run"]).arg(&model).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing --input for pixels"));
}

/// An MLF whose kernels come as an object file (as LLVM codegen delivers them), calling the
/// runtime through a weak function-pointer slot like LLVM code built without system-lib: the
/// object is linked with its symbols isolated, the slot is filled, and the outputs are right.
#[test]
fn object_kernels_are_linked_and_their_slots_filled() {
    let root = mlf_fixtures::workspace_root();
    let src = root.join("examples/digits/model");
    let archive = mlf_build::archive::Archive::open(src.join("digits.tar")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in archive.names() {
        if name == "codegen/host/src/default_lib1.c" {
            continue;
        }
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, archive.get(name).unwrap().as_slice()).unwrap();
    }
    // Kernels calling through a weak slot, compiled to an x86-64 object.
    let mut c = archive.get("codegen/host/src/default_lib1.c").unwrap().as_str().unwrap().to_string();
    c = c.replacen(
        "#include <math.h>",
        "#include <math.h>\n__attribute__((weak)) int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = 0;\nstatic int mlf_probe(int task_id, TVMParallelGroupEnv* penv, void* cdata) { *(int*)cdata = penv->num_task + task_id; return 0; }",
        1,
    );
    let softmax = c.find("TVM_DLL int32_t tvmgen_default_fused_nn_softmax(").unwrap();
    let ret = softmax + c[softmax..].find("\n  return 0;\n}").unwrap();
    c.insert_str(ret, "\n  { int n = 0; if (__TVMBackendParallelLaunch(mlf_probe, &n, 4) != 0 || n != 1) { return -1; } }");
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
