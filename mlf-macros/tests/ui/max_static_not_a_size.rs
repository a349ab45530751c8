// The limit is a size with a unit.
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", max_static = "lots");
fn main() {}
