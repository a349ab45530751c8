// A TVM model needs build.rs to compile its C; this crate has none. (The path reaches the
// repository's digits model from trybuild's project folder, target/tests/trybuild/mlf-macros.)
mlf_runtime::include_model!("../../../../examples/digits/model/digits.tar");
fn main() {}
