mlf_runtime::include_model!("tests/ui/files/corrupt.kmodel");

fn main() {}
