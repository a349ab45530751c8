// A TVM model needs build.rs to compile its C; this crate has none.
mlf_runtime::include_model!("../examples/digits/model/digits.tar");
fn main() {}
