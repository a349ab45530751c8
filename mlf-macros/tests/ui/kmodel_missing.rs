mlf_runtime::include_model!("tests/ui/files/no-such.kmodel");

fn main() {}
