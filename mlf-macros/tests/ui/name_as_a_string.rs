// `name = "digits"` is accepted as `name = digits` is: the error is the next one (this crate
// has no build script), not the option's form.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = "digits");
fn main() {}
