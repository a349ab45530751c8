//! Every misuse of `include_model!` is a compile error at the macro call, with a message that
//! says what to do: one case per error the macro can give (`tests/ui/*.rs` without a build
//! script, `tests/ui/out_dir/*.rs` with an `OUT_DIR` as a build script leaves it). Model files
//! for the kmodel cases are small byte files in `tests/ui/files/` (no ../shared needed).
//!
//! Not covered: a crate built without cargo (no `CARGO_MANIFEST_DIR`) and a model path that is
//! not UTF-8, which trybuild cannot set up.

use std::path::Path;

use mlf_build::__private::{Layout, Stamp};
use mlf_build::Placement;

/// An `OUT_DIR` in which the build step generated a module for the digits model from another
/// version of the file (its size, time and fingerprint differ), with parameters embedded.
fn out_dir_with_a_stale_module(root: &Path) -> std::path::PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-out-dir");
    let _ = std::fs::remove_dir_all(&out);
    let model = root.join("../examples/digits/model/digits.tar").canonicalize().unwrap();
    // trybuild compiles the cases in a package named after this one.
    let layout = Layout::new(&out, "mlf-macros-tests", &model, None, Placement::Embedded);
    let mut stamp = Stamp::of(&model).unwrap();
    stamp.files[0].size += 1;
    stamp.fingerprint = "0000000000000000".into();
    let (side, contents) = layout.side_file_for("digits", &stamp, "an older digits model");
    std::fs::create_dir_all(side.parent().unwrap()).unwrap();
    std::fs::write(&side, contents).unwrap();
    std::fs::write(layout.rust_file(), "").unwrap();
    out
}

/// An `OUT_DIR` in which the build step generated a module for the digits model as it is now
/// (an empty module: the cases only need it to be found), and the variable the build step sets
/// when its latest run built it.
fn out_dir_with_a_built_module(root: &Path) -> (std::path::PathBuf, String) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-out-dir-built");
    let _ = std::fs::remove_dir_all(&out);
    let model = root.join("../examples/digits/model/digits.tar").canonicalize().unwrap();
    let layout = Layout::new(&out, "mlf-macros-tests", &model, None, Placement::Embedded);
    let (side, contents) = layout.side_file_for("digits", &Stamp::of(&model).unwrap(), "the digits model");
    std::fs::create_dir_all(side.parent().unwrap()).unwrap();
    std::fs::write(&side, contents).unwrap();
    std::fs::write(layout.rust_file(), "").unwrap();
    (out, layout.built_env())
}

/// An `OUT_DIR` in which the build step's latest run built the digits model with streamed
/// parameters, and an earlier run with them embedded (both modules are there; only the
/// streamed one's variable is set).
fn out_dir_built_streamed(root: &Path) -> (std::path::PathBuf, String) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-out-dir-streamed");
    let _ = std::fs::remove_dir_all(&out);
    let model = root.join("../examples/digits/model/digits.tar").canonicalize().unwrap();
    let stamp = Stamp::of(&model).unwrap();
    let mut streamed_env = String::new();
    for placement in [Placement::Embedded, Placement::Streamed] {
        let layout = Layout::new(&out, "mlf-macros-tests", &model, None, placement);
        let (side, contents) = layout.side_file_for("digits", &stamp, "the digits model");
        std::fs::create_dir_all(side.parent().unwrap()).unwrap();
        std::fs::write(&side, contents).unwrap();
        std::fs::write(layout.rust_file(), "").unwrap();
        streamed_env = layout.built_env();
    }
    (out, streamed_env)
}

#[test]
fn macro_errors() {
    // trybuild compiles the cases in a crate under target/: resolve model paths against this
    // crate instead.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // SAFETY: set before any thread of this test process reads the environment.
    unsafe { std::env::set_var("MLF_MACROS_MANIFEST_DIR", root) };
    {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/*.rs");
        // What the compile-fail cases refuse, done right, compiles and runs.
        t.pass("tests/ui/pass/*.rs");
    }
    let out_dir = out_dir_with_a_stale_module(root);
    // SAFETY: as above; the first cases have been compiled (when `t` was dropped).
    unsafe { std::env::set_var("OUT_DIR", out_dir) };
    {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/out_dir/*.rs");
    }
    let (built, built_env) = out_dir_with_a_built_module(root);
    // SAFETY: as above.
    unsafe { std::env::set_var("OUT_DIR", built) };
    {
        // The module an earlier run of the build step left, which its latest run did not build.
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/built_earlier/*.rs");
    }
    // SAFETY: as above: the build step's latest run built the model.
    unsafe { std::env::set_var(&built_env, "1") };
    {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/built/*.rs");
    }
    let (streamed, streamed_env) = out_dir_built_streamed(root);
    // SAFETY: as above.
    unsafe {
        std::env::remove_var(&built_env);
        std::env::set_var("OUT_DIR", streamed);
        std::env::set_var(streamed_env, "1");
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/built_other_placement/*.rs");
}
