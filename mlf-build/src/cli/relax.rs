//! `cargo mlf inspect` for a Relax export (TVM 0.25–0.27): the executable's entry function,
//! inputs, outputs, kernels, weights and storage, and whether it can be built statically — and
//! if not, exactly why.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::error::Result;
use crate::model::{RelaxProgram, TensorId};
use crate::read::relax::exec::{Executable, FuncKind};
use crate::read::relax::{decode, lower::lower};
use crate::support::bytes::Bytes;

/// What the report says about the executable.
pub struct Section {
    /// The `"relax"` object of the JSON report.
    pub json: Value,
    /// The lines of the table.
    pub table: String,
    /// Why it cannot be built (the lowering's refusal), if it cannot.
    pub blocker: Option<String>,
}

/// The alignment the report's plan uses (the graph executor's default).
const PLAN_ALIGN: u64 = 16;

/// The section for an executable payload.
pub fn section(payload: &Bytes) -> Section {
    match decode(payload.as_slice()) {
        Err(e) => Section {
            json: json!({"error": e.to_string()}),
            table: format!("\nrelax executable\n  cannot be decoded: {e}\n"),
            blocker: Some(format!("the Relax VM executable cannot be decoded: {e}")),
        },
        Ok(ex) => {
            let lowered = lower(&ex);
            let (json, table) = describe(&ex, &lowered);
            let blocker = lowered.as_ref().err().map(ToString::to_string);
            Section { json, table, blocker }
        }
    }
}

fn tensor_json(p: &RelaxProgram, t: TensorId, name: Option<&str>) -> Value {
    let t = &p.tensors[t];
    json!({"name": name, "dtype": t.dtype.to_string(), "shape": t.shape, "bytes": t.bytes})
}

fn describe(ex: &Executable, lowered: &Result<RelaxProgram>) -> (Value, String) {
    let kind = |k: FuncKind| match k {
        FuncKind::Packed => "packed",
        FuncKind::Vm => "bytecode",
        FuncKind::VmTir => "vm-tir (exec_mode=compiled)",
    };
    let functions: Vec<Value> =
        ex.functions.iter().map(|f| json!({"name": f.name, "kind": kind(f.kind), "num_args": f.num_args})).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nrelax executable  version {}, {} functions, {} constants, {} instructions",
        ex.version,
        ex.functions.len(),
        ex.constants.len(),
        ex.instrs.len()
    );
    let mut v = json!({
        "version": ex.version,
        "magic": format!("{:#018x}", ex.magic),
        "functions": functions,
        "constants": ex.constants.len(),
        "instructions": ex.instrs.len(),
    });
    let obj = v.as_object_mut().expect("object literal");
    match lowered {
        Err(e) => {
            obj.insert("static".into(), false.into());
            obj.insert("why".into(), e.to_string().into());
            let _ = writeln!(s, "static       no: {e}");
        }
        Ok(p) => {
            obj.insert("static".into(), true.into());
            obj.insert("entry".into(), p.entry.clone().into());
            let inputs: Vec<Value> = p.inputs.iter().map(|i| tensor_json(p, i.tensor, Some(&i.name))).collect();
            let outputs: Vec<Value> = p.outputs.iter().map(|&t| tensor_json(p, t, None)).collect();
            let weights: Vec<Value> = p
                .weights
                .iter()
                .map(|w| json!({"name": format!("c[{}]", w.constant), "dtype": w.dtype.to_string(), "shape": w.shape, "bytes": w.data.len()}))
                .collect();
            let storages: Vec<u64> = p.storages.iter().map(|st| st.bytes).collect();
            obj.insert("inputs".into(), inputs.into());
            obj.insert("outputs".into(), outputs.into());
            obj.insert("kernels".into(), p.kernels().into());
            obj.insert("calls".into(), p.calls.len().into());
            obj.insert("weights".into(), weights.into());
            obj.insert("storage".into(), json!({"blocks": storages, "bytes": p.storage_sum()}));
            let plan = crate::plan::relax::plan(p, PLAN_ALIGN, &[]);
            obj.insert(
                "plan".into(),
                json!({"align": PLAN_ALIGN, "arena": plan.arena, "liveness_bound": plan.bound, "tvm_storage": plan.tvm_storage}),
            );
            let _ = writeln!(s, "static       yes: entry `{}`, {} kernel calls", p.entry, p.calls.len());
            let row = |s: &mut String, i: usize, name: &str, t: TensorId| {
                let t = &p.tensors[t];
                let _ = writeln!(s, "  {i:<3} {name:<28} {:<9} {:?} ({} bytes)", t.dtype.to_string(), t.shape, t.bytes);
            };
            s.push_str("inputs\n");
            for (i, inp) in p.inputs.iter().enumerate() {
                row(&mut s, i, &inp.name, inp.tensor);
            }
            s.push_str("outputs\n");
            for (i, &t) in p.outputs.iter().enumerate() {
                row(&mut s, i, "", t);
            }
            let _ = writeln!(s, "kernels      {}", p.kernels().join(", "));
            s.push_str("weights\n");
            for w in &p.weights {
                let name = format!("c[{}]", w.constant);
                let _ = writeln!(s, "  {name:<8} {:<9} {:?} ({} bytes)", w.dtype.to_string(), w.shape, w.data.len());
            }
            let _ = writeln!(
                s,
                "storage      {} blocks, {} bytes in all (TVM's alloc_storage sizes)",
                p.storages.len(),
                p.storage_sum()
            );
            let _ = writeln!(
                s,
                "plan         arena {} bytes (liveness bound {}; TVM's storage {}; aligned to {PLAN_ALIGN}; kernel scratch not counted)",
                plan.arena, plan.bound, plan.tvm_storage
            );
        }
    }
    (v, s)
}
