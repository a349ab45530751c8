// The module name must be a Rust identifier (written as a word or as a string).
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = "not a name");
fn main() {}
