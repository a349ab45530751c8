mlf_runtime::include_model!("../examples/digits/model/digits.tar", name digits);
fn main() {}
