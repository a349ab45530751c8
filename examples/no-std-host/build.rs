//! Builds the digits model, and links the C library and libm that its kernels (and a program
//! without std) need on a hosted target.
fn main() {
    mlf_build::Model::open("../digits/model/digits.tar").compile().unwrap_or_else(|e| panic!("{e}"));
    println!("cargo::rustc-link-lib=c");
    println!("cargo::rustc-link-lib=m");
}
