mlf_runtime::include_model!("tests/ui/files/fc.kmodel", arena = "two-words");

fn main() {}
