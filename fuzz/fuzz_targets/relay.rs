//! The relay text reader (`@main`'s signature and output names) on arbitrary text: must never
//! panic, overflow the stack or take more than linear time.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mlf_build::__private::read::relay::parse(text);
    }
});
