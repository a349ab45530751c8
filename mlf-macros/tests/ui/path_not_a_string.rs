mlf_runtime::include_model!(digits);
fn main() {}
