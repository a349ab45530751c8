//! The crate's `links = "mlf-runtime"` metadata: `profile=1` with the `profile` feature, which
//! the build scripts of crates that depend on it read as `DEP_MLF_RUNTIME_PROFILE` (mlf-build
//! then compiles an AOT model's C for per-operator profiling). With the
//! internal `__doctest` feature it builds the repository's digits example model, which the
//! crate's doc tests include.

fn main() {
    if std::env::var_os("CARGO_FEATURE_PROFILE").is_some() {
        println!("cargo::metadata=profile=1");
    }
    #[cfg(feature = "__doctest")]
    mlf_build::Model::open("../examples/digits/model/digits.tar").compile().unwrap_or_else(|e| panic!("{e}"));
}
