//! Tar archive reader + MLF assembly on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = mlf_build::__private::bytes::Bytes::new(data.to_vec());
    if let Ok(archive) = mlf_build::__private::read::archive::Archive::from_tar_bytes("fuzz.tar", bytes) {
        let _ = mlf_build::__private::read::mlf::read(&archive, &Default::default());
    }
});
