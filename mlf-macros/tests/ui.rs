//! `include_model!` misuse is a `compile_error!` at the call, with a message that says what is
//! wrong. The model files are small byte files in `tests/ui/files/` (no ../shared needed).

#[test]
fn ui() {
    // trybuild compiles the cases in a crate under target/: resolve model paths against this
    // crate instead.
    // SAFETY: set before any thread of this test process reads the environment.
    unsafe { std::env::set_var("MLF_MACROS_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR")) };
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/kmodel_*.rs");
}
