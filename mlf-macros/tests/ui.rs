//! Every misuse of `include_model!` is a compile error at the macro call, with a message that
//! says what to do. Model files for the kmodel cases are small byte files in `tests/ui/files/`
//! (no ../shared needed).

#[test]
fn macro_errors() {
    // trybuild compiles the cases in a crate under target/: resolve model paths against this
    // crate instead.
    // SAFETY: set before any thread of this test process reads the environment.
    unsafe { std::env::set_var("MLF_MACROS_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR")) };
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
