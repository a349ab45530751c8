//! `.params` reader on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = mlf_build::__private::bytes::Bytes::new(data.to_vec());
    let _ = mlf_build::__private::read::params::parse_params(&bytes);
});
