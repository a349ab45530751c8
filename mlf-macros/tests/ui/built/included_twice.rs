// One build step (one compiled C, which may keep state of its own: a USMP pool, C statics)
// included twice under two names: two `Model` types could run on that one state at once.
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = first);
mlf_runtime::include_model!("../examples/digits/model/digits.tar", name = second);
fn main() {}
