mlf_runtime::include_model!("tests/ui/files/v1.kmodel");

fn main() {}
