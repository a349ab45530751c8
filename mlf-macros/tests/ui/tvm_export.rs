// A TVM export (export_library output) is built by the build step, which says whether it can
// be (a Relax export of TVM 0.25–0.27) or why not; this crate has none.
mlf_runtime::include_model!("tests/ui/files/export.so");
fn main() {}
