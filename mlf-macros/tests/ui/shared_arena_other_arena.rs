// A model built for one shared arena listed in another: the arena says which model is wrong.
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = first, arena = detect);
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = second, arena = classify);
mlf_runtime::shared_arena!(detect: first, second);
mlf_runtime::shared_arena!(classify: second);

fn main() {}
