mlf_runtime::include_model!("../examples/digits/model/digits.tar", params = "sd-card");
fn main() {}
