mlf_runtime::include_model!("model.tar", params = external);
fn main() {}
