// `module = default` is accepted as `module = "default"` is: the build step it asks for names
// the module.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", module = default);
fn main() {}
