//! The build-side kmodel reader: synthetic models (always), every fixture in
//! ../shared/fixtures/kmodel (when present) and damaged files (the generated module has its
//! golden file in `generated_modules.rs`).

use std::path::{Path, PathBuf};

use mlf_build::__private::codegen::IncludePath;
use mlf_build::__private::inspect::{inspect_path, report_json};
use mlf_build::ErrorKind;
use mlf_build::Executor;
use mlf_build::ReadOptions;
use mlf_fixtures::kmodel_synth::{corrupt_cases, v3_conv, v3_fc, v4_conv};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The memory report per KPU backend: the device model counts main memory, emulated KPU RAM
/// and scratch; the K210 main memory and the CPU layers' scratch (none), each with a note
/// giving the other's figure.
#[test]
fn memory_report_is_per_kpu_backend() {
    use mlf_build::Kpu;
    let dir = tempfile::tempdir().unwrap();
    let d = mlf_build::open(write(dir.path(), "conv4.kmodel", &v4_conv().0)).unwrap();
    let Executor::Kmodel(k) = &d.executor else { panic!() };
    let report = |kpu| mlf_build::__private::memory_report_on(&d, "net", "riscv64gc-unknown-none-elf", None, None, kpu);
    let (model, k210) = (report(Kpu::DeviceModel).unwrap(), report(Kpu::K210).unwrap());
    let table = model.ram.arena - 160 - k.kpu_bytes - k.scratch_bytes;
    assert_eq!((k.kpu_bytes, k210.ram.arena), (512, 160 + table), "{k210}");
    let notes = k210.notes.join("\n");
    assert!(
        notes.contains("no KPU RAM") && notes.contains(&format!("would need {} bytes", model.ram.arena)),
        "{notes}"
    );
}

#[test]
fn synthetic_models_are_described() {
    let dir = tempfile::tempdir().unwrap();
    let d = mlf_build::open(write(dir.path(), "conv.kmodel", &v3_conv())).unwrap();
    assert_eq!(d.name, "conv");
    assert_eq!(d.inputs[0].shape, [1, 1, 4, 4]);
    assert_eq!(d.inputs[0].dtype.to_string(), "uint8");
    assert_eq!(d.outputs[0].shape, [1, 2, 4, 4], "output shape from the producing K210_CONV");
    assert!(d.blockers.is_empty());
    let Executor::Kmodel(k) = &d.executor else { panic!() };
    assert_eq!((k.version, k.compiler, k.main_bytes), (3, "nncase v0.1", 168));
    assert_eq!(k.op_counts(), [("K210_CONV".to_string(), 1), ("DEQUANTIZE".to_string(), 1)]);
    assert_eq!(k.kpu_bytes, 40 * 64 + 4 * 64, "KPU RAM up to the output map's end");

    let d = mlf_build::open(write(dir.path(), "conv4.kmodel", &v4_conv().0)).unwrap();
    assert_eq!(d.outputs[0].shape, [1, 2, 4, 4], "through dequantize to the kpu_conv2d map");
    let Executor::Kmodel(k) = &d.executor else { panic!() };
    assert_eq!((k.version, k.main_bytes, k.steps.len()), (4, 160, 2));

    let d = mlf_build::open(write(dir.path(), "fc.kmodel", &v3_fc())).unwrap();
    assert_eq!(d.inputs[0].shape, [1, 4]);
    assert_eq!(d.inputs[0].dtype.to_string(), "float32");
    assert_eq!(d.outputs[0].shape, [1, 2]);
}

#[test]
fn damaged_files_are_refused_with_the_file_field_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for c in corrupt_cases() {
        let p = write(dir.path(), "bad.kmodel", &c.bytes);
        match mlf_build::__private::read::kmodel::read(&p) {
            Ok(d) => {
                // Well-formed files that cannot run are described, with a blocker that
                // codegen refuses.
                let want = match c.name {
                    "V5 header" => "V5",
                    "V3 layer type the SDK does not run" => "GLOBAL_MAX_POOL2D",
                    "V3 16-bit weights" => "16-bit",
                    other => panic!("{other}: read"),
                };
                assert!(d.blockers[0].contains(want), "{}: {:?}", c.name, d.blockers);
                assert!(
                    mlf_build::__private::kmodel_module(
                        &p,
                        &IncludePath::Absolute("x".into()),
                        mlf_build::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES
                    )
                    .is_err()
                );
            }
            Err(e) => {
                let ErrorKind::Kmodel(k) = &e.kind else { panic!("{}: {e}", c.name) };
                assert!((c.expect)(k), "{}: {k:?}", c.name);
                assert_eq!(e.file.as_deref(), Some(p.as_path()));
                let msg = e.to_string();
                assert!(msg.starts_with(&p.display().to_string()), "{msg}");
                if let mlf_kmodel::KmodelError::BodyOutOfBounds { index, .. }
                | mlf_kmodel::KmodelError::BodyTooSmall { index, .. } = k
                {
                    assert!(e.field.as_deref().unwrap().ends_with(&format!("[{index}].body")), "{msg}");
                }
                eprintln!("{msg}");
                n += 1;
            }
        }
    }
    assert!(n >= 20);
}

#[test]
fn an_unsupported_v3_model_is_described_only_when_its_bodies_are_inside_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = v3_conv();
    bytes[4..8].copy_from_slice(&0u32.to_le_bytes()); // 16-bit weights
    let d = mlf_build::__private::read::kmodel::read(&write(dir.path(), "w16.kmodel", &bytes)).unwrap();
    let Executor::Kmodel(k) = &d.executor else { panic!() };
    assert_eq!((k.steps.len(), k.model_bytes, k.main_bytes), (2, bytes.len() as u64, 168));
    assert_eq!(d.outputs[0].shape, [1, 32]);
    bytes[36 + 12..36 + 16].copy_from_slice(&4096u32.to_le_bytes()); // last body past the file
    let e = mlf_build::__private::read::kmodel::read(&write(dir.path(), "w16.kmodel", &bytes)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Kmodel(mlf_kmodel::KmodelError::BodyOutOfBounds { index: 1, .. })), "{e}");
}

#[test]
fn v5_is_described_with_a_blocker_and_codegen_refuses_it() {
    let Some(root) = mlf_fixtures::fixtures_or_skip("v5 inspect") else { return };
    let p = root.join("kmodel/v5-mnist-cpu/mnist.kmodel");
    let d = mlf_build::open(&p).unwrap();
    assert_eq!(d.blockers.len(), 1);
    let Executor::Kmodel(k) = &d.executor else { panic!() };
    let v5 = k.v5.as_ref().unwrap();
    assert_eq!(v5.modules[0].kind, "stackvm");
    assert_eq!(v5.modules[0].sections.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(), [".rdata", ".text"]);
    let e = mlf_build::__private::kmodel_module(
        &p,
        &IncludePath::Absolute("x".into()),
        mlf_build::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES,
    )
    .unwrap_err();
    assert!(e.to_string().contains("V5"), "{e}");
}

#[test]
fn inspect_works_on_every_kmodel_fixture() {
    let Some(root) = mlf_fixtures::fixtures_or_skip("kmodel inspect") else { return };
    let mut n = 0;
    for d in std::fs::read_dir(root.join("kmodel")).unwrap().flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            let p = f.path();
            if p.extension().is_none_or(|e| e != "kmodel") {
                continue;
            }
            let folder = d.file_name().to_string_lossy().to_string();
            match inspect_path(&p, &ReadOptions::default()) {
                Ok((json, table)) => {
                    assert!(!folder.starts_with("v1-"), "{folder}: V1 must be refused");
                    assert_eq!(json["format"], "kmodel");
                    assert!(table.contains("compiler"), "{table}");
                    let v = json["version"].as_u64().unwrap();
                    assert_eq!(format!("v{v}-"), folder[..3], "{folder}");
                }
                Err(e) => {
                    assert!(folder.starts_with("v1-"), "{folder}: {e}");
                    assert!(e.to_string().contains("kmodel V1 (pre-nncase"), "{e}");
                }
            }
            n += 1;
        }
    }
    assert!(n >= 10, "{n}");
}

#[test]
fn report_json_keeps_the_common_keys() {
    let dir = tempfile::tempdir().unwrap();
    let d = mlf_build::open(write(dir.path(), "fc.kmodel", &v3_fc())).unwrap();
    let j = report_json(&d);
    for k in
        ["format", "version", "model_name", "executor", "interface", "inputs", "outputs", "params", "memory", "kmodel"]
    {
        assert!(j.get(k).is_some(), "{k}");
    }
    assert_eq!(j["kmodel"]["ops"][0]["op"], "FULLY_CONNECTED");
}
