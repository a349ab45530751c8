//! The build-side kmodel reader (`mlf_build::__private::read::kmodel::read_bytes`: the model description,
//! layer list, output shapes, V5 sections) on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(desc) = mlf_build::__private::read::kmodel::read_bytes(data, std::path::Path::new("fuzz.kmodel")) {
        let _ = mlf_build::__private::inspect::report_json(&desc);
        let _ = mlf_build::__private::inspect::report_table(&desc);
        let _ = mlf_build::__private::codegen::kmodel::module_tokens(&desc, std::path::Path::new("/fuzz.kmodel"));
    }
});
