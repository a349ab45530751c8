//! The kernels of every C Relax export in `fixtures/relax` (`lib0.c`) compile against mlf's own
//! headers for the tvm-ffi includes (`mlf-build/include/tvm/ffi/…`, `tvm/runtime/base.h`): with
//! the host's `cc` and, for the `mcpu=cortex-m4` export, with `arm-none-eabi-gcc` for a
//! Cortex-M4F. `-Wall -Werror` holds the headers to no warning; the two warnings TVM's own kernel
//! code raises (an unused variable, a maybe-uninitialized reduction) are not the headers'.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn lib0(fixture: &Path) -> Vec<u8> {
    let file = std::fs::File::open(fixture.join("model.tar")).unwrap();
    let mut tar = tar::Archive::new(flate2_or_plain(file));
    for entry in tar.entries().unwrap() {
        let mut e = entry.unwrap();
        if e.path().unwrap().to_str() == Some("lib0.c") {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut v).unwrap();
            return v;
        }
    }
    panic!("no lib0.c in {}", fixture.display())
}

/// The exports are gzip-compressed tars: gunzipped by mlf's own reader.
fn flate2_or_plain(file: std::fs::File) -> std::io::Cursor<Vec<u8>> {
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut { file }, &mut raw).unwrap();
    let data = mlf_build::__private::read::detect::gunzip(&raw, 1 << 28).unwrap_or(raw);
    std::io::Cursor::new(data)
}

fn have(cc: &str) -> bool {
    Command::new(cc).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn compile(cc: &str, extra: &[&str], src: &Path, out: &Path) -> Result<(), String> {
    let o = Command::new(cc)
        .args(["-std=c99", "-O1", "-Wall", "-Werror", "-Wno-unused-variable", "-Wno-maybe-uninitialized", "-c"])
        .args(extra)
        .arg("-I")
        .arg(root().join("mlf-build/include"))
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| e.to_string())?;
    if o.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&o.stderr).into_owned()) }
}

#[test]
fn relax_kernels_compile_against_mlfs_headers() {
    let tmp = tempfile::tempdir().unwrap();
    let arm = have("arm-none-eabi-gcc");
    if !have("cc") || !arm {
        let missing = if have("cc") { "arm-none-eabi-gcc" } else { "cc" };
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI: {missing} missing");
        eprintln!("skipped relax_kernels_compile_against_mlfs_headers: {missing} not found");
        return;
    }
    let mut n = 0;
    for e in std::fs::read_dir(root().join("fixtures/relax")).unwrap() {
        let d = e.unwrap().path();
        let name = d.file_name().unwrap().to_str().unwrap().to_string();
        if !(name.ends_with("-c") || name.ends_with("-c-m4")) || name.starts_with("refuse-compiled") {
            continue;
        }
        let src = tmp.path().join(format!("{name}.c"));
        std::fs::write(&src, lib0(&d)).unwrap();
        compile("cc", &[], &src, &tmp.path().join(format!("{name}.o"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        if name.ends_with("-m4") {
            let flags = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"];
            compile("arm-none-eabi-gcc", &flags, &src, &tmp.path().join(format!("{name}.m4.o")))
                .unwrap_or_else(|e| panic!("{name} (Cortex-M4F): {e}"));
        }
        n += 1;
    }
    assert_eq!(n, 14);
}
