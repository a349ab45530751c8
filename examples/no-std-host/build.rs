//! Builds the digits model, and links the C library and libm that its kernels (and a program
//! without std) need on a hosted target.
fn main() {
    mlf_build::Model::open("../digits/model/digits.tar").compile_or_exit();
    println!("cargo::rustc-link-lib=c");
    println!("cargo::rustc-link-lib=m");
}
