// An option needs `=` and a value; the help says how it is written.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name digits);
fn main() {}
