//! `.params` reader on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = mlf_build::bytes::Bytes::new(data.to_vec());
    let _ = mlf_build::format::params::parse_params(&bytes);
});
