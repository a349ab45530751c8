// build.rs builds the model with streamed parameters (`.params(Placement::Streamed)`), while
// this call keeps the default placement: the error names both, not "no longer builds".
mlf_runtime::include_model!("../examples/digits/model/digits.tar");
fn main() {}
