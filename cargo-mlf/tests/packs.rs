//! Signed packs through the CLI: `cargo mlf keygen` makes a key pair (never over an existing
//! file), `cargo mlf pack --sign KEY --sequence N` writes a header and a signature, and `cargo mlf
//! inspect` shows them with the model digest `split` recorded.

use std::process::Command;

#[test]
fn keygen_pack_sign_and_inspect() {
    let root = mlf_fixtures::workspace_root();
    let model = root.join("examples/digits/model/digits.tar");
    let bin = env!("CARGO_BIN_EXE_cargo-mlf");
    let t = tempfile::tempdir().unwrap();
    let key = t.path().join("params");
    let keygen = || Command::new(bin).args(["mlf", "keygen", "-o"]).arg(&key).output().unwrap();
    assert!(keygen().status.success());
    let again = keygen();
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("never overwrites"));
    let public = std::fs::read_to_string(t.path().join("params.pub")).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");

    let split = t.path().join("split");
    assert!(Command::new(bin).args(["mlf", "split"]).arg(&model).arg("-o").arg(&split).status().unwrap().success());
    let packed = t.path().join("digits.pack");
    let pack = Command::new(bin)
        .args(["mlf", "pack"])
        .arg(&split)
        .arg("-o")
        .arg(&packed)
        .arg("--sign")
        .arg(t.path().join("params.key"))
        .args(["--sequence", "3"])
        .output()
        .unwrap();
    assert!(pack.status.success(), "{}", String::from_utf8_lossy(&pack.stderr));
    let inspect = Command::new(bin).args(["mlf", "inspect", "--json"]).arg(&packed).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(split.join("configure.json")).unwrap()).unwrap();
    let digest = config["digest"].as_str().unwrap();
    assert_eq!(digest.len(), 64);
    assert_eq!(report["digest"].as_str(), Some(digest));
    let header = &report["header"];
    assert_eq!(
        (header["sequence"].as_u64(), header["signed"].as_bool(), header["digest"].as_str()),
        (Some(3), Some(true), Some(digest)),
        "{report}"
    );

    // Signing with something that is not a private key names the file.
    let bad = Command::new(bin)
        .args(["mlf", "pack"])
        .arg(&split)
        .arg("-o")
        .arg(t.path().join("other.pack"))
        .arg("--sign")
        .arg(t.path().join("params.pub"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && stderr.contains("params.pub") && stderr.contains("private key"), "{stderr}");
}

/// A Relax export as TVM writes it (a gzipped tar) splits into parameter files and packs.
#[test]
fn a_gzipped_relax_export_splits_and_packs() {
    let model = mlf_fixtures::workspace_root().join("fixtures/relax/mlp-f32-fused-c/model.tar");
    let bin = env!("CARGO_BIN_EXE_cargo-mlf");
    let t = tempfile::tempdir().unwrap();
    let split = t.path().join("split");
    let out = Command::new(bin).args(["mlf", "split"]).arg(&model).arg("-o").arg(&split).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let params = std::fs::read_dir(split.join("params")).unwrap().count();
    assert_eq!(params, 4, "the MLP's four weight tensors");
    assert!(split.join("configure.json").is_file());
    let packed = t.path().join("mlp.pack");
    let out = Command::new(bin).args(["mlf", "pack"]).arg(&split).arg("--out").arg(&packed).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::metadata(&packed).unwrap().len() > 9640, "the pack holds the 9,640 bytes of weights");
}
