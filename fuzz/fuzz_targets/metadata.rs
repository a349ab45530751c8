//! metadata.json reader on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = mlf_build::__private::read::metadata::Metadata::parse(data) {
        let _ = m.module(None);
    }
});
