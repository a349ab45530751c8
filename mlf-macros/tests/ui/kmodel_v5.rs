mlf_runtime::include_model!("tests/ui/files/v5.kmodel");

fn main() {}
