//! The AOT interface header reader on arbitrary text: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mlf_build::__private::read::header::InterfaceHeader::parse(text, "default");
    }
});
