// The build script built the model with its parameters embedded, not resident.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", params = "resident");
fn main() {}
