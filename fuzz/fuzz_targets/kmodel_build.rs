//! The build-side kmodel reader (`mlf_build::__private::read::kmodel::read_bytes`: the model description,
//! layer list, output shapes, V5 sections) on arbitrary bytes: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(desc) = mlf_build::__private::read::kmodel::read_bytes(data, std::path::Path::new("fuzz.kmodel")) {
        let _ = mlf_build::__private::inspect::report_json(&desc);
        let _ = mlf_build::__private::inspect::report_table(&desc);
        if let mlf_build::Executor::Kmodel(k) = &desc.executor {
            let include = mlf_build::__private::codegen::IncludePath::Absolute("/fuzz.kmodel".into());
            let _ = mlf_build::__private::codegen::kmodel::module_tokens(&desc, k, &include, "fuzz.kmodel");
        }
    }
});
