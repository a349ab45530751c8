// "external" is two placements: the error says which to choose.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", params = "external");
fn main() {}
