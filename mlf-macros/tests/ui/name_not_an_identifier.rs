// The module name is an identifier, not a string.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = "digits");
fn main() {}
