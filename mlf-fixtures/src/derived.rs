//! Archives derived from the repository's digits AOT archive (`digits-aot-c.tar`, copyable) for
//! cases no fixture covers: C in the 2021 form whose types only its casts tell, metadata and
//! header that record less, C that needs a vendor library, C with Arm DSP intrinsics. Each is the
//! digits MLP still, so the ones that can be built reproduce `examples/digits/model/vectors`.

use crate::{digits_aot_c_tar, edit_member, replace_once, tar_members};

/// Members of an archive.
pub type Members = Vec<(String, Vec<u8>)>;

/// The kernels' file and the interface header of `digits-aot-c.tar`.
pub const KERNELS: &str = "codegen/host/src/default_lib1.c";
/// The interface header.
pub const HEADER: &str = "codegen/host/include/tvmgen_default.h";

/// `digits-aot-c.tar`'s members.
pub fn digits_aot_c() -> Members {
    tar_members(&digits_aot_c_tar())
}

/// Removes `inputs` and `outputs` of the main function from `metadata.json` (as in archives
/// before TVM 0.11).
pub fn without_metadata_io(mut m: Members) -> Members {
    edit_member(&mut m, "metadata.json", |t| {
        let mut v: serde_json::Value = serde_json::from_str(t).expect("metadata.json");
        let main = &mut v["modules"]["default"]["memory"]["functions"]["main"][0];
        let main = main.as_object_mut().expect("main");
        assert!(main.remove("inputs").is_some() && main.remove("outputs").is_some());
        serde_json::to_string_pretty(&v).expect("JSON")
    });
    m
}

/// The AOT main in the 2021 form: `void*` parameters aliased by locals.
pub fn untyped_main(mut m: Members) -> Members {
    edit_member(&mut m, KERNELS, |t| {
        replace_once(
            t,
            "tvmgen_default___tvm_main__(float* pixels_buffer_var, float* output_buffer_var) {",
            "tvmgen_default___tvm_main__(void* arg0, void* arg1) {\n  void* pixels_buffer_var = arg0;\n  void* output_buffer_var = arg1;",
        )
    });
    m
}

/// The last kernel (softmax) in the 2021 form too: its output a `void*` parameter, aliased, and
/// written through a cast; then only that cast tells the output's dtype.
pub fn untyped_last_kernel(mut m: Members) -> Members {
    edit_member(&mut m, KERNELS, |t| {
        let t = replace_once(
            t,
            "tvmgen_default_fused_nn_softmax(float* p0, float* T_softmax_norm) {",
            "tvmgen_default_fused_nn_softmax(float* p0, void* arg1) {\n  void* T_softmax_norm = arg1;",
        );
        replace_once(&t, "    T_softmax_norm[i1_1] = ", "    ((float*)T_softmax_norm)[i1_1] = ")
    });
    m
}

/// Removes the interface header's size macros of the inputs and outputs.
pub fn without_size_macros(mut m: Members) -> Members {
    edit_member(&mut m, HEADER, |t| {
        let t = replace_once(t, "#define TVMGEN_DEFAULT_PIXELS_SIZE 256\n", "");
        replace_once(&t, "#define TVMGEN_DEFAULT_OUTPUT_SIZE 40\n", "")
    });
    m
}

/// The relay text with `text` added to the signature, after its parameter list (`-> T`).
pub fn relay_returns(mut m: Members, ty: &str) -> Members {
    edit_member(&mut m, "src/default.relay", |t| {
        replace_once(t, "%p3: Tensor[(10), float32]) {", &format!("%p3: Tensor[(10), float32]) -> {ty} {{"))
    });
    m
}

/// The softmax kernel also calls `function(T_softmax_norm, 10)` of a vendor library declared in
/// `<header>` and fails the model when it returns non-zero: the model then needs that library
/// to compile, link and run.
pub fn calling_vendor(mut m: Members, header: &str, function: &str) -> Members {
    edit_member(&mut m, KERNELS, |t| {
        let t = replace_once(t, "#include <math.h>\n", &format!("#include <math.h>\n#include <{header}>\n"));
        let call = format!(
            "    T_softmax_norm[i1_1] = (T_softmax_exp[i1_1] / T_softmax_expsum[0]);\n  }}\n  if ({function}(T_softmax_norm, 10) != 0) {{\n    return -1;\n"
        );
        replace_once(&t, "    T_softmax_norm[i1_1] = (T_softmax_exp[i1_1] / T_softmax_expsum[0]);\n", &call)
    });
    m
}

/// A tiny vendor library for [`calling_vendor`]: `include/<header>` declaring `function(float*,
/// int32_t)` and `src/<function>.c` defining it (0 when every value is a probability), written
/// under `dir`.
pub fn write_vendor_library(dir: &std::path::Path, header: &str, function: &str) {
    let h = format!(
        "#ifndef FAKE_VENDOR_H\n#define FAKE_VENDOR_H\n#include <stdint.h>\nint32_t {function}(const float* p, int32_t n);\n#endif\n"
    );
    let c = format!(
        "#include <{header}>\nint32_t {function}(const float* p, int32_t n) {{\n  for (int32_t i = 0; i < n; ++i) {{\n    if (!(p[i] >= 0.0f && p[i] <= 1.0f)) return -1;\n  }}\n  return 0;\n}}\n"
    );
    for (rel, text) in [(format!("include/{header}"), h), (format!("src/{function}.c"), c)] {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("create folder");
        std::fs::write(&p, text).expect("write");
    }
}

/// The model with a kernel helper that uses Arm DSP intrinsics (`<arm_acle.h>`, `__smlad`), as
/// TVM's `arm_cpu` schedules generate: it builds for Cortex-M4/M7 only.
pub fn with_dsp_intrinsics(mut m: Members) -> Members {
    edit_member(&mut m, KERNELS, |t| {
        let t = replace_once(t, "#include <math.h>\n", "#include <math.h>\n#include <arm_acle.h>\n");
        replace_once(
            &t,
            "TVM_DLL int32_t tvmgen_default_fused_nn_softmax(",
            "TVM_DLL int32_t tvmgen_default_dsp_dot(int32_t a, int32_t b) {\n  return __smlad(a, b, 0);\n}\n\nTVM_DLL int32_t tvmgen_default_fused_nn_softmax(",
        )
    });
    m
}

/// `m` with every C file under `codegen/host/src/` that `compile` selects compiled by `compiler`
/// (with `flags`) into the object `codegen/host/lib/<name>.o` and left out as C: kernels (and
/// their constants) delivered as an object, as TVM's LLVM codegen delivers them. The C sees
/// mlf's shipped headers and the archive's own (`codegen/host/include`). Panics with the
/// compiler's message when it fails.
pub fn with_c_as_objects(m: Members, compiler: &str, flags: &[&str], compile: impl Fn(&str) -> bool) -> Members {
    let dir = tempfile::tempdir().expect("temporary folder");
    crate::write_members(dir.path(), &m);
    let shipped = crate::workspace_root().join("mlf-build/include");
    let own = dir.path().join("codegen/host/include");
    let mut out = Vec::new();
    let mut objects = Vec::new();
    for (name, data) in m {
        let Some(file) = name.strip_prefix("codegen/host/src/").filter(|f| f.ends_with(".c") && compile(&name)) else {
            out.push((name, data));
            continue;
        };
        let object = dir.path().join(file.replace(".c", ".o"));
        let o = std::process::Command::new(compiler)
            .args(flags)
            .arg("-c")
            .arg("-I")
            .arg(&shipped)
            .arg("-I")
            .arg(&own)
            .arg(dir.path().join(&name))
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap_or_else(|e| panic!("{compiler}: {e}"));
        assert!(o.status.success(), "{compiler} {name}: {}", String::from_utf8_lossy(&o.stderr));
        objects.push((format!("codegen/host/lib/{}", file.replace(".c", ".o")), std::fs::read(&object).unwrap()));
    }
    out.extend(objects);
    out
}
