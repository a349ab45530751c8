//! Constant sections taken out of an object and its relocations retargeted, on arbitrary
//! bytes: must never panic, hang or allocate by an untrusted length; what comes out is an object
//! the reader parses again, without the taken bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((out, taken)) = mlf_build::__private::testing::objects::external_object(data) {
        let again = object::File::parse(&out[..]);
        assert!(again.is_ok() || taken == 0, "a rewritten object does not parse: {:?}", again.err());
    }
});
