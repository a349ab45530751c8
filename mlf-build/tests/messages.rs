//! Messages that say what to do: a framework's model instead of a compiled one, a folder that
//! holds the archive instead of being it.

use std::path::Path;

fn open_err(path: &Path) -> String {
    mlf_build::open(path).unwrap_err().to_string()
}

#[test]
fn a_tflite_or_onnx_model_is_named_with_the_tvmc_line() {
    let dir = tempfile::tempdir().unwrap();
    // A TensorFlow Lite flatbuffer: its identifier "TFL3" at byte 4.
    let tflite = dir.path().join("kws.bin");
    std::fs::write(&tflite, b"\x1c\x00\x00\x00TFL3\x00\x00\x12\x00").unwrap();
    let e = open_err(&tflite);
    assert!(e.contains("a TensorFlow Lite model") && e.contains("--output-format mlf"), "{e}");
    assert!(e.contains("0.19"), "{e}");
    let onnx = dir.path().join("net.onnx");
    std::fs::write(&onnx, b"\x08\x07\x12\x07pytorch").unwrap();
    let e = open_err(&onnx);
    assert!(e.contains("an ONNX model") && e.contains("tvmc compile"), "{e}");
}

#[test]
fn a_folder_holding_the_archive_suggests_it() {
    let dir = tempfile::tempdir().unwrap();
    let digits = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar");
    std::fs::copy(&digits, dir.path().join("model.tar")).unwrap();
    let e = open_err(dir.path());
    let want = format!("did you mean {}?", dir.path().join("model.tar").display());
    assert!(e.contains("not an extracted MLF archive") && e.contains(&want), "{e}");
    assert!(mlf_build::open(dir.path().join("model.tar")).is_ok());
}
