//! Synthetic graph-executor archives of any size, for measuring how the build step scales with
//! the number of operators and the bytes of weights (`mlf-build`'s `scaling` bench).
//!
//! The model is a chain of `ops` operators over float32 vectors of varying length, with a skip
//! connection every third operator (so lifetimes overlap in more than one way), a scratch
//! allocation in one kernel out of three, and, when `weight_bytes > 0`, one parameter `w` of
//! that many bytes that every third operator reads. Its C is real TVM-style C and runs: each
//! kernel reads the lengths it works on from its tensors' shapes.

use crate::derived::Members;

/// The archive's members for a chain of `ops` operators (at least 1) with `weight_bytes` bytes
/// of weights (a multiple of 4; 0 for none).
pub fn chain(ops: usize, weight_bytes: u64) -> Members {
    assert!(ops >= 1 && weight_bytes % 4 == 0);
    let width = |k: usize| 16 * (1 + (k * 5) % 8) as u64;
    let has_w = weight_bytes > 0;
    // Nodes: 0 = input x, 1 = w (when present), then one node per operator.
    let mut nodes = vec![serde_json::json!({"op": "null", "name": "x", "inputs": []})];
    let mut shapes = vec![vec![1u64, width(0)]];
    if has_w {
        nodes.push(serde_json::json!({"op": "null", "name": "w", "inputs": []}));
        shapes.push(vec![weight_bytes / 4]);
    }
    let first_op = nodes.len();
    let mut funcs = std::collections::BTreeSet::new();
    for k in 0..ops {
        let prev = if k == 0 { 0 } else { first_op + k - 1 };
        let (func, inputs) = match k % 3 {
            0 if has_w => ("tvmgen_default_fused_synth_weight", vec![prev, 1]),
            1 if k >= 3 => ("tvmgen_default_fused_synth_add", vec![prev, first_op + k - 3]),
            2 => ("tvmgen_default_fused_synth_scratch", vec![prev]),
            _ => ("tvmgen_default_fused_synth_copy", vec![prev]),
        };
        funcs.insert(func);
        let inputs: Vec<_> = inputs.iter().map(|&n| serde_json::json!([n, 0, 0])).collect();
        nodes.push(serde_json::json!({
            "op": "tvm_op", "name": func, "inputs": inputs,
            "attrs": {"num_outputs": "1", "num_inputs": inputs.len().to_string(), "flatten_data": "0", "func_name": func},
        }));
        shapes.push(vec![1, width(k + 1)]);
    }
    let n = nodes.len();
    let arg_nodes: Vec<usize> = (0..first_op).collect();
    let graph = serde_json::json!({
        "nodes": nodes,
        "arg_nodes": arg_nodes,
        "heads": [[n - 1, 0, 0]],
        "attrs": {
            "dltype": ["list_str", vec!["float32"; n]],
            "device_index": ["list_int", vec![1; n]],
            "storage_id": ["list_int", (0..n).collect::<Vec<_>>()],
            "shape": ["list_shape", shapes],
        },
        "node_row_ptr": (0..=n).collect::<Vec<_>>(),
    });
    let bytes = |s: &Vec<u64>| s.iter().product::<u64>() * 4;
    let mut sids: Vec<serde_json::Value> = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let mut sid = serde_json::json!({"size_bytes": bytes(s), "storage_id": i});
        if i < first_op {
            sid["input_binding"] = serde_json::json!(if i == 0 { "x" } else { "w" });
        }
        sids.push(sid);
    }
    let operator_functions: Vec<_> = funcs
        .iter()
        .map(|f| {
            let ws = if f.ends_with("scratch") { 256 } else { 0 };
            serde_json::json!({"function_name": f, "workspace": [{"device": 1, "workspace_size_bytes": ws}]})
        })
        .collect();
    let out_bytes = bytes(&shapes[n - 1]);
    let metadata = serde_json::json!({
        "modules": {"default": {
            "executors": ["graph"],
            "export_datetime": "2026-11-29 00:00:00Z",
            "memory": {
                "functions": {
                    "main": [{
                        "constants_size_bytes": weight_bytes,
                        "device": 1,
                        "inputs": {"x": {"dtype": "float32", "size": bytes(&shapes[0])}},
                        "io_size_bytes": bytes(&shapes[0]) + out_bytes,
                        "outputs": {"output": {"dtype": "float32", "size": out_bytes}},
                        "workspace_size_bytes": 256,
                    }],
                    "operator_functions": operator_functions,
                },
                "sids": sids,
            },
            "model_name": "default",
            "style": "full-model",
            "target": ["c -keys=cpu "],
        }},
        "version": 7,
    });
    let relay = if has_w {
        format!(
            "def @main(%x: Tensor[(1, {}), float32], %w: Tensor[({}), float32]) {{ synthetic }}\n",
            width(0),
            weight_bytes / 4
        )
    } else {
        format!("def @main(%x: Tensor[(1, {}), float32]) {{ synthetic }}\n", width(0))
    };
    let mut members: Members = vec![
        ("codegen/host/src/default_lib0.c".into(), registry(&funcs).into_bytes()),
        ("codegen/host/src/default_lib1.c".into(), kernels(&funcs).into_bytes()),
        ("executor-config/graph/default.graph".into(), serde_json::to_vec_pretty(&graph).expect("json")),
        ("metadata.json".into(), serde_json::to_vec_pretty(&metadata).expect("json")),
        ("src/default.relay".into(), relay.into_bytes()),
    ];
    members.push(("parameters/default.params".into(), params(weight_bytes)));
    members.sort_by(|a, b| a.0.cmp(&b.0));
    members
}

/// The weights: float32 values `(i % 251) / 256`, distinct enough to find in an image.
pub fn weight_values(weight_bytes: u64) -> impl Iterator<Item = f32> {
    (0..weight_bytes / 4).map(|i| (i % 251) as f32 / 256.0)
}

/// `parameters/default.params` (TVM's `save_param_dict` layout) holding `w` when present.
fn params(weight_bytes: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(weight_bytes as usize + 128);
    out.extend_from_slice(&0xF7E5_8D4F_0504_9CB7u64.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let count = u64::from(weight_bytes > 0);
    out.extend_from_slice(&count.to_le_bytes());
    if count == 1 {
        out.extend_from_slice(&1u64.to_le_bytes());
        out.push(b'w');
    }
    out.extend_from_slice(&count.to_le_bytes());
    if count == 1 {
        out.extend_from_slice(&0xDD5E_40F0_96B4_A13Fu64.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&1i32.to_le_bytes()); // device type: CPU
        out.extend_from_slice(&0i32.to_le_bytes());
        out.extend_from_slice(&1i32.to_le_bytes()); // ndim
        out.extend_from_slice(&[2, 32, 1, 0]); // float32
        out.extend_from_slice(&((weight_bytes / 4) as i64).to_le_bytes());
        out.extend_from_slice(&(weight_bytes as i64).to_le_bytes());
        for v in weight_values(weight_bytes) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// The system library registry (`default_lib0.c`).
fn registry(funcs: &std::collections::BTreeSet<&str>) -> String {
    let mut c = String::from("#include <tvm/runtime/crt/module.h>\n");
    for f in funcs {
        c.push_str(&format!("TVM_DLL int32_t {f}(TVMValue* args, int* type_code, int num_args, TVMValue* out_value, int* out_type_code, void* resource_handle);\n"));
    }
    c.push_str("static TVMBackendPackedCFunc _tvm_func_array[] = {\n");
    for f in funcs {
        c.push_str(&format!("    (TVMBackendPackedCFunc){f},\n"));
    }
    let names: String = funcs.iter().map(|f| format!("{f}\\000")).collect();
    c.push_str(&format!(
        "}};\nstatic const TVMFuncRegistry _tvm_func_registry = {{\n    \"\\{:03o}\\000{names}\",    _tvm_func_array,\n}};\n",
        funcs.len()
    ));
    c.push_str("static const TVMModule _tvm_system_lib = {\n    &_tvm_func_registry,\n};\nconst TVMModule* TVMSystemLibEntryPoint(void) {\n    return &_tvm_system_lib;\n}\n");
    c
}

/// The kernels (`default_lib1.c`): each reads its tensors' lengths from their shapes.
fn kernels(funcs: &std::collections::BTreeSet<&str>) -> String {
    let mut c = String::from(
        "// tvm target: c -keys=cpu \n#define TVM_EXPORTS\n#include \"tvm/runtime/c_runtime_api.h\"\n#include \"tvm/runtime/c_backend_api.h\"\n#include <math.h>\n#include <stdbool.h>\n",
    );
    let len = "static int64_t synth_len(void* t) {\n  int64_t* shape = (int64_t*)(((DLTensor*)t)[0].shape);\n  int32_t ndim = (((DLTensor*)t)[0].ndim);\n  int64_t n = 1;\n  for (int32_t i = 0; i < ndim; ++i) {\n    n = n * shape[i];\n  }\n  return n;\n}\n";
    c.push_str(len);
    for f in funcs {
        let n_in = if f.ends_with("add") || f.ends_with("weight") { 2 } else { 1 };
        c.push_str(&format!("TVM_DLL int32_t {f}(void* args, int32_t* arg_type_ids, int32_t num_args, void* out_ret_value, int32_t* out_ret_tcode, void* resource_handle) {{\n"));
        for a in 0..=n_in {
            c.push_str(&format!("  void* t{a} = (((TVMValue*)args)[{a}].v_handle);\n  float* d{a} = (float*)(((DLTensor*)t{a})[0].data);\n  int64_t n{a} = synth_len(t{a});\n"));
        }
        let out = n_in;
        let body = match f.rsplit('_').next() {
            Some("add") => format!("d{out}[i] = d0[i % n0] + d1[i % n1];"),
            Some("weight") => format!("d{out}[i] = d0[i % n0] * 0.5f + d1[(i * 7919) % n1];"),
            Some("scratch") => format!("s[i % 64] = d0[i % n0]; d{out}[i] = s[i % 64] * 0.75f;"),
            _ => format!("d{out}[i] = d0[i % n0];"),
        };
        if f.ends_with("scratch") {
            c.push_str("  int32_t dev_id = (((DLTensor*)t0)[0].device.device_id);\n  float* s = (float*)TVMBackendAllocWorkspace(1, dev_id, (uint64_t)256, 2, 32);\n  if (s == NULL) {\n    return -1;\n  }\n");
        }
        c.push_str(&format!("  for (int64_t i = 0; i < n{out}; ++i) {{\n    {body}\n  }}\n"));
        if f.ends_with("scratch") {
            c.push_str("  if (TVMBackendFreeWorkspace(1, dev_id, s) != 0) {\n    return -1;\n  }\n");
        }
        c.push_str("  return 0;\n}\n\n");
    }
    c
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_and_members() {
        let m = super::chain(10, 64);
        let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"executor-config/graph/default.graph"));
        let params = &m.iter().find(|(n, _)| n == "parameters/default.params").unwrap().1;
        assert_eq!(params.len(), 8 + 8 + 8 + 9 + 8 + 48 + 64);
        let graph: serde_json::Value =
            serde_json::from_slice(&m.iter().find(|(n, _)| n.ends_with("default.graph")).unwrap().1).unwrap();
        assert_eq!(graph["nodes"].as_array().unwrap().len(), 12);
    }
}
