//! What the `objects` target rewrites, carried on to the linker: an object mlf accepts (the
//! check made when an archive is read), with its constant sections taken out and its relocations
//! retargeted, checked again as the build checks the model's library, is linked into a shared
//! library by rust-lld (or `ld.lld`/`ld` when the toolchain's is not found). mlf may refuse the
//! input at any step; what it lets through must never crash or hang the linker (rust-lld crashed
//! with SIGSEGV on a relocation past its section). The linker's own refusal (an error exit) is
//! fine: undefined symbols are allowed, not every object links.
#![no_main]
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use mlf_build::__private::read::object_check;

/// The linker and its flavour argument, found once.
fn linker() -> Option<&'static (PathBuf, Vec<&'static str>)> {
    static LINKER: OnceLock<Option<(PathBuf, Vec<&'static str>)>> = OnceLock::new();
    LINKER
        .get_or_init(|| {
            let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
            let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
            let lld = sysroot.join("lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld");
            if lld.exists() {
                return Some((lld, vec!["-flavor", "gnu"]));
            }
            for l in ["ld.lld", "ld"] {
                if Command::new(l).arg("--version").output().is_ok_and(|o| o.status.success()) {
                    return Some((PathBuf::from(l), Vec::new()));
                }
            }
            eprintln!("objects_link: no linker found; only mlf's steps are exercised");
            None
        })
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    if object_check::check("fuzz.o", data, None).is_err() {
        return;
    }
    let Ok((out, _)) = mlf_build::__private::testing::objects::external_object(data) else { return };
    if object_check::check("fuzz.o (rewritten)", &out, None).is_err() {
        return;
    }
    let Some((lld, flavour)) = linker() else { return };
    let dir = std::env::temp_dir().join(format!("mlf-fuzz-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.o");
    std::fs::write(&input, &out).unwrap();
    let mut child = Command::new(lld)
        .args(flavour)
        .args(["-shared", "--unresolved-symbols=ignore-all", "-o"])
        .arg(dir.join("out.so"))
        .arg(&input)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the linker starts");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the linker hung on an object mlf accepted");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(status.code().is_some(), "the linker crashed ({status}) on an object mlf accepted");
});
