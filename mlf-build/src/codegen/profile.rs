//! What a module adds when its operators run inside the model's own C (an AOT main calling
//! its kernels) and the C was compiled for profiling: the operators' names and the hook the C
//! calls around each of them, which passes the call on to `mlf_runtime::profile`. Without
//! profiling nothing is added.

use proc_macro2::TokenStream;
use quote::quote;

/// The items for operators `calls` (in call order), the hook exported as `hook` (the symbol
/// the instrumented C calls: `hook(index, 0)` before operator `index`, `hook(index, 1)` after).
pub fn hook_items(calls: &[String], hook: &str) -> TokenStream {
    let n = calls.len();
    let len = proc_macro2::Literal::usize_unsuffixed(n);
    let doc = format!(
        " The kernels the model's main calls, in order: operator `i` of the profile is \
         `PROFILED_CALLS[i]` ({n} operators; `docs/profiling.md`)."
    );
    let hook_doc = format!(
        " Called by the model's C (compiled for profiling, as `{hook}`) before (`edge` 0) and \
         after (`edge` 1) each kernel call: passes it on to `mlf_runtime::profile`."
    );
    quote! {
        #[doc = #doc]
        pub const PROFILED_CALLS: [&str; #len] = [#(#calls),*];

        #[doc = #hook_doc]
        #[doc(hidden)]
        #[unsafe(export_name = #hook)]
        pub extern "C" fn __mlf_profile_op(index: u32, edge: u32) {
            let Some(name) = PROFILED_CALLS.get(index as usize) else { return };
            let unit = ::mlf_runtime::profile::Unit::Cpu;
            if edge == 0 {
                ::mlf_runtime::profile::before(index, name, unit);
            } else {
                ::mlf_runtime::profile::after(index, name, unit);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_is_exported_under_the_prefixed_name_and_names_each_call() {
        let calls = ["tvmgen_default_fused_a".to_string(), "tvmgen_default_fused_b".to_string()];
        let text = hook_items(&calls, "mlf_0badf00d_mlf_profile_op").to_string();
        assert!(text.contains("export_name = \"mlf_0badf00d_mlf_profile_op\""), "{text}");
        assert!(text.contains("[& str ; 2] = [\"tvmgen_default_fused_a\" , \"tvmgen_default_fused_b\"]"), "{text}");
    }
}
