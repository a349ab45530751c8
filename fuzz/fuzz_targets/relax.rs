//! The Relax VM executable decoder and the lowering of its entry function on arbitrary bytes
//! (an executable payload): must never panic, allocate without bound or take more than linear
//! time.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mlf_build::__private::read::relax;

fuzz_target!(|data: &[u8]| {
    if let Ok(ex) = relax::decode(data) {
        let _ = relax::text::as_text(&ex);
        let _ = relax::lower::lower(&ex);
    }
});
