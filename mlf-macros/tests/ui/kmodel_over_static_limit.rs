// The kmodel needs more static memory than the limit the call sets (a header can claim 4 GiB of
// main memory: such a module is refused before any code is generated).
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", max_static = "16 B");
fn main() {}
