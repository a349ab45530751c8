// The placement is a string.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", params = resident);
fn main() {}
