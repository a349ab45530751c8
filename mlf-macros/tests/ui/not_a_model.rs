// A crate manifest is a file, but not a model.
mlf_runtime::include_model!("Cargo.toml");
fn main() {}
