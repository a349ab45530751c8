// A shared object that export_library wrote is not an MLF archive.
mlf_runtime::include_model!("tests/ui/files/export.so");
fn main() {}
