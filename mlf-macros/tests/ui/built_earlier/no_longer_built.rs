// The build step built this model in an earlier run (its module is still in OUT_DIR) but not
// in its latest one, so the model's C is no longer linked: the macro says so instead of a
// linker error.
mlf_runtime::include_model!("../examples/digits/model/digits.tar");
fn main() {}
