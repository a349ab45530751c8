// A KPU backend that is not one.
mlf_runtime::include_model!("tests/ui/files/v5.kmodel", kpu = gpu);
fn main() {}
