//! A scanner for TVM-generated C: which functions and globals a file defines (and whether they
//! are `static`), function parameter lists, `TVMBackendAllocWorkspace` sizes per function, the
//! calls each function makes, `#include`s, and the `_lookup_linked_param` table.
//!
//! What it finds is the model's description of the C ([`CFile`]). It is not a C parser. It tokenises (skipping comments, string and character literals, and
//! `#ifdef __cplusplus` regions) and reads top-level items by bracket structure, which is enough
//! for the regular shape of TVM's output. It never fails: unreadable items are skipped.

mod guards;
mod in_place;
mod interval;
mod items;
mod linear;
mod pool_access;
mod pool_lets;
mod refs;
mod stores;
mod tokens;
mod uses;

pub use pool_access::{PoolReach, param_reach, pool_reach};
pub use pool_lets::{PoolLet, pool_lets};
pub use stores::{KernelStores, elem_bytes, kernel_stores};
pub use tokens::parse_c_int;

use crate::model::CFile;

impl CFile {
    /// Scans C source text.
    pub fn scan(text: &str) -> CFile {
        let mut file = CFile::default();
        if let Some(first) = text.lines().next() {
            if let Some(t) = first.trim().strip_prefix("// tvm target:") {
                file.target_comment = Some(t.trim().to_string());
            }
        }
        let (toks, spans) = tokens::tokenize(text, &mut file.includes);
        items::parse_items(&toks, &spans, &mut file);
        if defines_macros(text) {
            // A macro may change what the kernels' tokens mean: no in-place proof holds.
            file.functions.iter_mut().for_each(|f| f.in_place.clear());
        }
        file
    }
}

/// Whether C `text` has a `#define` or `#undef` other than `#define TVM_EXPORTS` (its tokens may
/// not mean what they say).
pub fn defines_macros(text: &str) -> bool {
    text.lines().any(|line| {
        let Some(d) = line.trim_start().strip_prefix('#') else { return false };
        let mut words = d.split_whitespace();
        match words.next() {
            Some("define") => words.next() != Some("TVM_EXPORTS") || words.next().is_some(),
            Some("undef") => true,
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"// tvm target: c -keys=cpu
#define TVM_EXPORTS
#include "tvm/runtime/c_runtime_api.h"
#include <math.h>
#ifdef __cplusplus
extern "C" {
#endif
static const float __attribute__((section(".rodata.tvm"), aligned(16))) fused_constant[4] = { 0x1p-1f, 2.0f, 3, 4 };
void* __tvm_module_ctx = NULL;
__attribute__((section(".bss.noinit.tvm"), aligned(16)))
static uint8_t global_workspace[228];
TVM_DLL int32_t tvmgen_default_fused_add(float* p0, float* T_add);
TVM_DLL int32_t tvmgen_default_fused_add(float* p0, float* T_add) {
  void* w = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)1024, 2, 32);
  if (w == NULL) { return -1; }
  for (int32_t i = 0; i < 4; ++i) { T_add[i] = p0[i] + ((float*)fused_constant)[i]; }
  if (TVMBackendFreeWorkspace(1, dev_id, w) != 0) { return -1; }
  return 0;
}
static int32_t helper(void) { return 0; }
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,struct tvmgen_default_outputs* outputs) {return tvmgen_default___tvm_main__(inputs->pixels,outputs->output);
}
#ifdef __cplusplus
}
#endif
"#;

    #[test]
    fn scans_definitions_globals_and_allocs() {
        let f = CFile::scan(SAMPLE);
        assert_eq!(f.target_comment.as_deref(), Some("c -keys=cpu"));
        assert_eq!(f.includes.len(), 2);
        let add = f.definition("tvmgen_default_fused_add").unwrap();
        assert_eq!(add.params.len(), 2);
        assert_eq!(add.params[0].ty, "float*");
        assert_eq!(add.params[1].name, "T_add");
        assert_eq!(add.workspace_allocs, vec![Some(1024)]);
        assert!(!add.is_static);
        assert!(f.definition("helper").unwrap().is_static);
        let run = f.definition("tvmgen_default_run").unwrap();
        assert_eq!(run.calls[0].callee, "tvmgen_default___tvm_main__");
        assert_eq!(run.calls[0].args, vec!["inputs->pixels", "outputs->output"]);
        let exported: Vec<_> = f.exported_symbols().collect();
        assert_eq!(exported, vec!["tvmgen_default_fused_add", "tvmgen_default_run", "__tvm_module_ctx"]);
        let ws = f.globals.iter().find(|g| g.name == "global_workspace").unwrap();
        assert_eq!(ws.array_len, Some(228));
        assert!(ws.is_static);
        assert_eq!(ws.aligned, Some(16));
        let c = f.globals.iter().find(|g| g.name == "fused_constant").unwrap();
        assert_eq!(c.array_len, Some(4));
    }

    #[test]
    fn reads_linked_param_table() {
        let src = "TVM_DLL int32_t _lookup_linked_param(void* args, int* arg_type_ids, int num_args, void* out_ret_value, int* out_ret_tcode, void* resource_handle) {\n switch (((int64_t*) args)[0]) {\n default: out_ret_tcode[0] = 4; return 0;\n case 10: ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p7; out_ret_tcode[0] = 3; return 0;\n case 3: ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p1; return 0;\n }\n}\n";
        let f = CFile::scan(src);
        assert_eq!(f.linked_params.get(&10).map(String::as_str), Some("__tvm_param__p7"));
        assert_eq!(f.linked_params.get(&3).map(String::as_str), Some("__tvm_param__p1"));
        assert!(f.definition("_lookup_linked_param").unwrap().is_packed());
    }

    #[test]
    fn removes_items_with_their_attributes() {
        let src = "#include <x.h>\n__attribute__((section(\".rodata.tvm\"), ))\nstatic struct global_const_workspace {\n  float a[2] __attribute__((aligned(16)));\n} global_const_workspace = {\n  .a = {1.0f, 2.0f},\n};// of total size 8 bytes\n__attribute__((section(\".bss.noinit.tvm\"), aligned(16)))\nstatic uint8_t global_workspace[32];\nTVM_DLL int32_t tvmgen_default___tvm_main__(float* a, float* b, uint8_t* c, uint8_t* d);\nint32_t tvmgen_default_run(struct tvmgen_default_inputs* i, struct tvmgen_default_outputs* o) {\n  return tvmgen_default___tvm_main__(i->a, o->b, &global_const_workspace, &global_workspace);\n}\n";
        let f = CFile::scan(src);
        let out = f.without_items(src, &["global_const_workspace", "global_workspace", "tvmgen_default_run"]);
        assert!(!out.contains("global_const_workspace ="), "{out}");
        assert!(!out.contains("global_workspace[32]"), "{out}");
        assert!(!out.contains("tvmgen_default_run("), "{out}");
        assert!(!out.contains("section"), "{out}");
        assert!(out.contains("tvmgen_default___tvm_main__(float* a"), "{out}");
        assert!(out.contains("#include <x.h>"));
        // What is left still scans to the main's prototype only.
        let again = CFile::scan(&out);
        assert!(again.globals.is_empty());
        assert_eq!(again.functions.len(), 1);
    }

    #[test]
    fn integers_are_read_as_c_reads_them() {
        for (text, want) in [
            ("0", Some(0)),
            ("10", Some(10)),
            ("010", Some(8)),
            ("0x1F", Some(31)),
            ("0X1f", Some(31)),
            ("255u", Some(255)),
            ("1024UL", Some(1024)),
            ("16ull", Some(16)),
            ("7LU", Some(7)),
            ("0777", Some(511)),
            ("18446744073709551615ULL", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("08", None),
            ("0x", None),
            ("1.5", None),
            ("1e3", None),
            ("+1", None),
            ("1uu", None),
            ("1lul", None),
            ("", None),
        ] {
            assert_eq!(parse_c_int(text), want, "{text}");
        }
        let f = CFile::scan("static const float fused_constant[010];\n");
        assert_eq!(f.globals[0].array_len, Some(8));
    }

    #[test]
    fn never_panics_on_garbage() {
        for s in ["{{{", ")))(", "int f(", "#include", "\"unterminated", "/* open", "static x[", "a b c = { ;", "'"] {
            let _ = CFile::scan(s);
        }
    }

    #[test]
    fn follows_aliases_to_the_casts_of_stores_and_loads() {
        // The 2021 unpacked form: `void*` parameters, aliases, typed casts at each access.
        let src = "TVM_DLL int32_t k(void* arg0, void* arg1, float* p2) {\n  void* placeholder = arg0;\n  void* T_cast = arg1;\n  for (int32_t i = 0; i < 4; ++i) {\n    int32_t _1 = (int32_t)roundf(((float*)placeholder)[(i)] * p2[0]);\n    if (((int8_t*)T_cast)[(i)] == 0) { }\n    ((int8_t*)T_cast)[(i)] = ((int8_t)_1);\n  }\n  return 0;\n}\nTVM_DLL int32_t run_model(void* arg0, void* arg1) {\n  void* input = arg0;\n  void* output = arg1;\n  (void)k(input, output, 0);\n  return 0;\n}\n";
        let f = CFile::scan(src);
        let k = f.definition("k").unwrap();
        assert_eq!(k.param_uses[0].names, vec!["arg0", "placeholder"]);
        assert_eq!((k.param_uses[0].read(), k.param_uses[0].written()), (Some("float"), None));
        assert_eq!(k.param_uses[1].stored.as_deref(), Some("int8_t"));
        assert_eq!(k.param_uses[1].loaded.as_deref(), Some("int8_t"));
        assert_eq!((k.param_uses[2].declared.as_deref(), k.param_uses[2].written()), (Some("float"), Some("float")));
        let main = f.definition("run_model").unwrap();
        assert_eq!(main.param_uses[1].names, vec!["arg1", "output"]);
        assert_eq!(main.param_uses[1].declared, None);
        assert_eq!(main.calls[0].args, vec!["input", "output", "0"]);
    }

    #[test]
    fn a_file_ending_inside_a_block_is_marked_where_the_block_opens() {
        for (text, at) in [
            ("int f(void) {", 12),
            ("int g(void) { return 0; }\nint f(void) {\n  if (1) {\n  }\n", 38),
            ("static int a[2] = {1,", 18),
            ("int f(void) { { }", 12),
        ] {
            let f = CFile::scan(text);
            assert_eq!(f.unclosed, Some(at), "{text:?}");
        }
        assert_eq!(CFile::scan("int f(void) { { } }\n").unclosed, None);
    }
}
