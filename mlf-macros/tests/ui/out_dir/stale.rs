// The build script generated a module for the model, then the model changed, and the build
// script no longer builds it (the module left in OUT_DIR is from another version of the file).
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = digits);
fn main() {}
