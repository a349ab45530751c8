//! Generates the module (and the C-side files) of every model this repository and
//! ../shared/fixtures hold, in every parameter placement each supports, into one folder, so that
//! two versions of mlf-build can be compared file by file (`diff -r`).
//!
//! Not run by `cargo test` (it compiles every fixture's C several times). Run it with
//!
//! ```sh
//! MLF_GENERATE_DIR=/tmp/gen cargo test -p mlf-build --test generate_all -- --ignored --nocapture
//! ```
//!
//! The folder holds `mlf/<case>/<placement>/` (the build's output folder as `build.rs` would
//! have it, the split folder of external parameters, `built.json` with what the build returned,
//! and `report.json`) or `error.txt` when the build refuses that placement, and
//! `kmodel/<case>/module.rs` (the module `include_model!` generates) or `error.txt`, and
//! `inspect/<case>.{json,txt}`: what `cargo mlf inspect` prints for every fixture file, with
//! `report.json`, the memory report `cargo mlf build --check-only` computes from the description.

use std::path::{Path, PathBuf};

use mlf_build::__private::codegen::{IncludePath, render};

const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Every MLF case: (case name, model path, MLF module).
fn mlf_cases() -> Vec<(String, PathBuf, Option<&'static str>)> {
    let root = mlf_fixtures::workspace_root();
    let mut cases = vec![("repo-digits".to_string(), mlf_fixtures::digits_tar(), None)];
    for m in ["default", "other"] {
        cases.push((format!("repo-two-modules-{m}"), root.join("model-tests/models/two-modules.tar"), Some(m)));
    }
    if let Some(shared) = mlf_fixtures::fixtures_dir() {
        for fx in mlf_fixtures::mlf_fixtures(&shared) {
            cases.push((fx.name, fx.model, None));
        }
    }
    cases
}

/// Every kmodel case: (case name, file), the shared fixtures' and the synthetic ones.
fn kmodel_cases(scratch: &Path) -> Vec<(String, PathBuf)> {
    use mlf_fixtures::kmodel_synth::{v3_conv, v3_fc, v4_conv, v4_qconv};
    let mut cases = Vec::new();
    for (name, bytes) in
        [("v3_conv", v3_conv()), ("v3_fc", v3_fc()), ("v4_conv", v4_conv().0), ("v4_qconv", v4_qconv())]
    {
        let p = scratch.join(format!("{name}.kmodel"));
        std::fs::write(&p, bytes).unwrap();
        cases.push((format!("synth-{name}"), p));
    }
    if let Some(shared) = mlf_fixtures::fixtures_dir() {
        let mut dirs: Vec<_> = std::fs::read_dir(shared.join("kmodel")).unwrap().flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let mut files: Vec<_> = std::fs::read_dir(&d)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "kmodel"))
                .collect();
            files.sort();
            for f in files {
                let name = format!(
                    "{}-{}",
                    d.file_name().unwrap().to_string_lossy(),
                    f.file_stem().unwrap().to_string_lossy()
                );
                cases.push((name, f));
            }
        }
    }
    cases
}

fn write(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn generate_mlf(out: &Path) {
    for (case, model, module) in mlf_cases() {
        for placement in mlf_build::Placement::ALL {
            let name = placement.name();
            let dir = out.join("mlf").join(&case).join(name);
            let mut m = mlf_build::Model::open(&model).params(placement);
            if placement.is_external() {
                m = m.split_dir(dir.join("split"));
            }
            if let Some(module) = module {
                m = m.module(module);
            }
            match m.build_into(&model, &dir.join("out"), "mlf-generate", TARGET, TARGET, false) {
                Ok(built) => {
                    write(&dir.join("built.json"), serde_json::to_string_pretty(&built).unwrap());
                    let report = built.report().unwrap();
                    write(&dir.join("report.json"), serde_json::to_string_pretty(&report).unwrap());
                    eprintln!("{case} {name}: {} bytes of arena", built.arena_bytes);
                }
                Err(e) => {
                    write(&dir.join("error.txt"), e.to_string());
                    eprintln!("{case} {name}: refused: {e}");
                }
            }
        }
    }
}

fn generate_kmodel(out: &Path, scratch: &Path) {
    for (case, path) in kmodel_cases(scratch) {
        let dir = out.join("kmodel").join(&case);
        let include = IncludePath::Absolute(path.to_str().unwrap().to_string());
        let text = mlf_build::__private::kmodel_module(
            &path,
            &include,
            mlf_build::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES,
        )
        .and_then(|(_, tokens)| render::text(&tokens, &[]));
        match text {
            Ok(text) => write(&dir.join("module.rs"), text),
            Err(e) => write(&dir.join("error.txt"), e.to_string()),
        }
        eprintln!("kmodel {case}: done");
    }
}

/// Every file `inspect` reads: (case name, path).
fn inspect_cases(scratch: &Path) -> Vec<(String, PathBuf)> {
    let mut cases: Vec<(String, PathBuf)> =
        mlf_cases().into_iter().filter(|c| c.2.is_none()).map(|c| (c.0, c.1)).collect();
    cases.extend(kmodel_cases(scratch));
    if let Some(shared) = mlf_fixtures::fixtures_dir() {
        for d in ["legacy-tvm0.13", "tvm-ffi"] {
            let mut files: Vec<_> = std::fs::read_dir(shared.join("blob").join(d))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| !p.extension().is_some_and(|e| e == "md" || e == "json"))
                .collect();
            files.sort();
            for f in files {
                cases.push((format!("blob-{d}-{}", f.file_name().unwrap().to_string_lossy()), f));
            }
        }
    }
    cases
}

fn generate_inspect(out: &Path, scratch: &Path) {
    let opts = mlf_build::ReadOptions::default();
    for (case, path) in inspect_cases(scratch) {
        let dir = out.join("inspect").join(&case);
        match mlf_build::__private::inspect::inspect_path(&path, &opts) {
            Ok((json, table)) => {
                write(&dir.join("inspect.json"), serde_json::to_string_pretty(&json).unwrap());
                write(&dir.join("inspect.txt"), table);
            }
            Err(e) => write(&dir.join("inspect-error.txt"), e.to_string()),
        }
        if let Ok(desc) = mlf_build::open(&path) {
            let name = desc.default_module_name(&path);
            match mlf_build::__private::memory_report(&desc, &name, TARGET, None, None) {
                Ok(r) => write(&dir.join("report.json"), serde_json::to_string_pretty(&r).unwrap()),
                Err(e) => write(&dir.join("report-error.txt"), e.to_string()),
            }
        }
    }
}

#[test]
#[ignore = "writes every fixture's generated module into $MLF_GENERATE_DIR (a comparison tool)"]
fn generate_every_module() {
    let out = PathBuf::from(std::env::var("MLF_GENERATE_DIR").expect("set MLF_GENERATE_DIR to the folder to write"));
    let _ = std::fs::remove_dir_all(&out);
    let scratch = out.join("synthetic-kmodels");
    std::fs::create_dir_all(&scratch).unwrap();
    generate_mlf(&out);
    generate_kmodel(&out, &scratch);
    generate_inspect(&out, &scratch);
}
