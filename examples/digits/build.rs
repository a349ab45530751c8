//! Compiles the digits model's C and generates its Rust module (see `include_model!` in main.rs).
fn main() {
    mlf_build::Model::open("model/digits.tar").compile_or_exit();
}
