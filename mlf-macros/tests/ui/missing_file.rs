mlf_runtime::include_model!("models/does-not-exist.tar");
fn main() {}
