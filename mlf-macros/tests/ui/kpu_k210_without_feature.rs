// The K210 backend without mlf-runtime's feature `k210`.
mlf_runtime::include_model!("tests/ui/files/v5.kmodel", kpu = k210);
fn main() {}
