//! Module-blob readers on arbitrary bytes: must never panic, never allocate by an untrusted
//! length, and whatever reads as a blob must write back to exactly the same bytes.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mlf_build::__private::bytes::Bytes;
use mlf_build::__private::read::blob::{self, source, Layout};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let bytes = Bytes::new(rest.to_vec());
    match mode % 6 {
        m @ 0..=2 => {
            let layout = [Layout::Legacy, Layout::Ffi021, Layout::Ffi][m as usize];
            if let Ok(b) = blob::parse(&bytes, layout) {
                assert_eq!(b.to_bytes(), b.bytes.as_slice(), "write(read(x)) != x");
                for m in &b.modules {
                    if let Some(p) = mlf_build::__private::testing::blob::encode_payload(&m.decoded, layout) {
                        let _ = p.len();
                    }
                }
                match &b.import_tree {
                    Some(t) => {
                        let _ = t.to_json(&b.modules);
                        let _ = t.to_lines(&b.modules);
                    }
                    None => {
                        let _ = blob::tree::implicit_root_json(&b.modules);
                    }
                }
            }
        }
        3 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                if let Ok(found) = source::scan_c(text) {
                    for f in found {
                        let _ = blob::parse(&f.bytes, f.layout);
                    }
                }
            }
        }
        4 => {
            if let Ok(scan) = source::scan_object(&bytes) {
                for b in scan.blobs {
                    let _ = blob::parse(&b.bytes, b.layout);
                }
            }
        }
        _ => {
            // The whole file path: tar (gzip too), object, C text or raw blob.
            let _ = source::scan_bytes(Path::new("fuzz.bin"), bytes);
        }
    }
});
