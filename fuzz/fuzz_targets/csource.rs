//! The generated-C scanner (functions, globals, includes, workspace calls, linked parameters),
//! the bounds of kernels' stores (checked against graph entries) and the reach of accesses into
//! USMP pools and through pointer parameters (guards of conditional expressions read) on
//! arbitrary text: must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mlf_build::__private::read::csource::kernel_stores(text);
        let _ = mlf_build::__private::read::csource::pool_reach(text, &["global_workspace_1_var", "p0"]);
        let _ = mlf_build::__private::read::csource::param_reach(text, "p0", Some(2));
        let file = mlf_build::__private::model::CFile::scan(text);
        let _ = file.exported_symbols().count();
        if let Some(f) = file.functions.first() {
            let _ = file.definition(&f.name);
        }
    }
});
