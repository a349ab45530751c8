// `params = streamed` is accepted as `params = "streamed"` is: the build step it asks for has
// that placement.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", params = streamed);
fn main() {}
