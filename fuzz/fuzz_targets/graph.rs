//! Graph config reader on arbitrary bytes: must never panic; a parsed graph must be safe to index.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = mlf_build::__private::model::Graph::parse(data) {
        for h in &g.heads {
            let e = g.eid(*h);
            let _ = g.entry_bytes(e);
        }
    }
});
