// `kpu` is for kmodels.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", kpu = device_model);
fn main() {}
