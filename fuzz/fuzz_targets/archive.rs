//! Tar archive reader + MLF assembly on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = mlf_build::bytes::Bytes::new(data.to_vec());
    if let Ok(archive) = mlf_build::archive::Archive::from_tar_bytes("fuzz.tar", bytes) {
        let _ = mlf_build::mlf::read(&archive, &Default::default());
    }
});
