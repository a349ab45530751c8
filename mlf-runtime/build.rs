//! Nothing for users (the crate has a build script for `links = "mlf-runtime"`). With the
//! internal `__doctest` feature it builds the repository's digits example model, which the
//! crate's doc tests include.

fn main() {
    #[cfg(feature = "__doctest")]
    mlf_build::Model::open("../examples/digits/model/digits.tar").compile().unwrap_or_else(|e| panic!("{e}"));
}
