// The crate has a build script (OUT_DIR is set), but it does not build this model.
mlf_runtime::include_model!("../model-tests/models/two-modules.tar", module = "other");
fn main() {}
