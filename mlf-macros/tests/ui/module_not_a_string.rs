// The MLF module is a string.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", module = default);
fn main() {}
