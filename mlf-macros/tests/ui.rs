//! Every misuse of `include_model!` is a compile error at the macro call, with a message that
//! says what to do.

#[test]
fn macro_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
