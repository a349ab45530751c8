//! Records the target triple cargo-mlf is built for (the host it runs on): the host triple when
//! `rustc -vV` cannot tell it.
fn main() {
    println!("cargo::rustc-env=MLF_HOST_TARGET={}", std::env::var("TARGET").unwrap());
}
