// build.rs built the model without a link section: the call may not ask for one.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", arena_section = ".dtcm");

fn main() {}
