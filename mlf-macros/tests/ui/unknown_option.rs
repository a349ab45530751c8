// An option include_model! does not have.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", colour = "red");
fn main() {}
