mlf_runtime::include_model!("tests/ui/files/fc.kmodel", arena_section = ".ps ram");

fn main() {}
