//! `cargo mlf inspect`: a readable summary and a stable JSON report of a model.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::Result;
use crate::read::detect::{self, FileKind};
use crate::read::mlf::MlfOptions;

use crate::model::{AotCall, Executor, ModelDesc, ModelFormat, TensorInfo};

/// The interface name reported for a model: `packed` for graph models (kernels are packed
/// functions), `c`, `packed` or `unpacked` for AOT entry points.
pub fn interface(desc: &ModelDesc) -> &'static str {
    match &desc.executor {
        Executor::Graph(_) => "packed",
        Executor::Aot(a) => match &a.call {
            AotCall::CInterface { .. } => "c",
            AotCall::Packed { .. } => "packed",
            AotCall::Unpacked { .. } if a.header.is_some() => "c",
            AotCall::Unpacked { .. } => "unpacked",
        },
        Executor::Kmodel(_) => "kmodel",
    }
}

fn tensors(ts: &[TensorInfo]) -> Value {
    Value::Array(
        ts.iter()
            .map(|t| json!({"name": t.name, "ident": t.ident, "dtype": t.dtype.to_string(), "shape": t.shape, "shape_source": t.shape_source}))
            .collect(),
    )
}

/// The JSON report of an MLF model:
/// `{"format":"mlf","version":N,"model_name":S,"executor":"graph"|"aot","interface":S,
/// "inputs":[…],"outputs":[…],"params":{"count","bytes","linked"},"memory":{"workspace_bytes","constants_bytes"}, …}`.
pub fn report_json(desc: &ModelDesc) -> Value {
    let (format, version) = match desc.format {
        ModelFormat::Mlf { version } => ("mlf", version),
        ModelFormat::Kmodel { version } => ("kmodel", version),
    };
    let (count, bytes, linked) = if desc.params.is_empty() {
        let c = &desc.code.constants;
        (c.len() as u64, c.iter().map(|c| c.bytes).sum::<u64>(), !c.is_empty())
    } else {
        let linked = desc.params.iter().all(|p| p.linked.is_some());
        (desc.params.len() as u64, desc.params.iter().map(|p| p.bytes()).sum::<u64>(), linked)
    };
    let mut v = json!({
        "format": format,
        "version": version,
        "model_name": desc.name,
        "executor": desc.executor.kind(),
        "interface": interface(desc),
        "inputs": tensors(&desc.inputs),
        "outputs": tensors(&desc.outputs),
        "params": {"count": count, "bytes": bytes, "linked": linked},
        "memory": {
            "workspace_bytes": desc.memory.workspace_bytes,
            "constants_bytes": desc.memory.constants_bytes,
            "io_bytes": desc.memory.io_bytes,
        },
        "targets": desc.targets,
        "sources": desc.code.sources.iter().map(|s| s.member.clone()).collect::<Vec<_>>(),
        "objects": desc.code.objects.iter().map(|s| s.member.clone()).collect::<Vec<_>>(),
        "constants_in_code": desc.code.constants,
        "facts": desc.facts,
        "warnings": desc.warnings,
        "blockers": desc.blockers,
        "external_params": match crate::plan::split::refusal(desc) {
            None => json!({"possible": true}),
            Some(why) => json!({"possible": false, "why": why}),
        },
    });
    let obj = v.as_object_mut().expect("object");
    match &desc.executor {
        Executor::Graph(g) => {
            obj.insert(
                "graph".into(),
                json!({
                    "nodes": g.graph.nodes.len(),
                    "entries": g.graph.num_entries(),
                    "operators": g.functions.len(),
                    "calls": g.graph.nodes.iter().filter(|n| matches!(n.op, crate::model::NodeOp::Call { .. })).count(),
                }),
            );
        }
        Executor::Aot(a) => {
            obj.insert(
                "aot".into(),
                json!({
                    "call": a.call,
                    "style": a.style,
                    "usmp": a.usmp,
                    "external_pools": a.external_pools,
                    "workspace_bytes": a.workspace_bytes,
                    "workspace_source": a.workspace_source,
                }),
            );
        }
        Executor::Kmodel(k) => {
            obj.insert("kmodel".into(), kmodel_json(k));
        }
    }
    v
}

fn kmodel_json(k: &crate::model::KmodelExec) -> Value {
    json!({
        "version": k.version,
        "compiler": k.compiler,
        "file_bytes": k.file_bytes,
        "model_bytes": k.model_bytes,
        "trailing_bytes": k.trailing_bytes,
        "header": k.header.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "ops": k.op_counts().into_iter().map(|(n, c)| json!({"op": n, "count": c})).collect::<Vec<_>>(),
        "layers": k.steps.iter().map(|s| json!({"type": s.kind, "name": s.name, "offset": s.offset, "size": s.size, "detail": s.detail})).collect::<Vec<_>>(),
        "memory": {
            "main_bytes": k.main_bytes,
            "kpu_bytes": k.kpu_bytes,
            "kpu_rows": k.kpu_rows,
            "scratch_bytes": k.scratch_bytes,
            "constants_bytes": k.constants_bytes,
        },
        "kpu_macs": k.macs,
        "v5": k.v5,
    })
}

fn kmodel_table(s: &mut String, k: &crate::model::KmodelExec) {
    let line = |s: &mut String, key: &str, v: String| s.push_str(&format!("{key:<12} {v}\n"));
    line(s, "compiler", format!("{} (kmodel V{})", k.compiler, k.version));
    line(
        s,
        "size",
        format!(
            "{} bytes of model, {} bytes of file, {} trailing bytes",
            k.model_bytes, k.file_bytes, k.trailing_bytes
        ),
    );
    line(s, "header", k.header.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" "));
    if let Some(v5) = &k.v5 {
        line(
            s,
            "layout",
            format!(
                "{} header, alignment {}, entry module {}",
                if v5.new_layout { "nncase v1.0.0+" } else { "pre-Aug-2021" },
                v5.alignment,
                v5.entry_module
            ),
        );
        for (i, m) in v5.modules.iter().enumerate() {
            s.push_str(&format!(
                "  module {i}: {} v{}, {} bytes, {} functions\n",
                m.kind, m.version, m.size, m.functions
            ));
            for (loc, size) in &m.mempools {
                s.push_str(&format!("    mempool location {loc}: {size} bytes\n"));
            }
            for (name, flags, size) in &m.sections {
                s.push_str(&format!(
                    "    section {name:<10} {size} bytes{}\n",
                    if flags & 1 != 0 { " (merged into .rdata)" } else { "" }
                ));
            }
        }
        return;
    }
    line(
        s,
        "ram",
        format!(
            "main memory {} bytes, KPU RAM {} bytes ({} rows of 64), scratch {} bytes; total static {} bytes",
            k.main_bytes,
            k.kpu_bytes,
            k.kpu_rows,
            k.scratch_bytes,
            k.main_bytes + k.kpu_bytes + k.scratch_bytes
        ),
    );
    line(s, "kpu", format!("{} multiply-accumulates per inference", k.macs));
    line(s, "ops", k.op_counts().iter().map(|(n, c)| format!("{n} x{c}")).collect::<Vec<_>>().join(", "));
    s.push_str(&format!("\n{}\n", if k.version == 3 { "layers" } else { "nodes" }));
    for (i, st) in k.steps.iter().enumerate() {
        s.push_str(&format!("  {i:<4} {:<26} @{:<8} {:>8} B  {}\n", st.name, st.offset, st.size, st.detail));
    }
}

/// A human-readable summary.
pub fn report_table(desc: &ModelDesc) -> String {
    let mut s = String::new();
    let fmt = match desc.format {
        ModelFormat::Mlf { version } => format!("TVM Model Library Format, metadata version {version}"),
        ModelFormat::Kmodel { version } => format!("kmodel V{version}"),
    };
    let line = |s: &mut String, k: &str, v: String| s.push_str(&format!("{k:<12} {v}\n"));
    line(&mut s, "file", desc.path.display().to_string());
    line(&mut s, "format", fmt);
    line(&mut s, "model", desc.name.clone());
    line(&mut s, "executor", format!("{} (interface: {})", desc.executor.kind(), interface(desc)));
    if let Executor::Aot(a) = &desc.executor {
        line(&mut s, "entry", a.style.clone());
        line(&mut s, "workspace", format!("{} bytes ({})", a.workspace_bytes, a.workspace_source));
    }
    for t in &desc.targets {
        line(&mut s, "target", t.trim().to_string());
    }
    s.push('\n');
    let table = |s: &mut String, title: &str, ts: &[TensorInfo]| {
        s.push_str(&format!("{title}\n"));
        s.push_str(&format!(
            "  {:<3} {:<28} {:<26} {:<9} {:<16} {:>9}\n",
            "#", "name", "rust field", "dtype", "shape", "bytes"
        ));
        for (i, t) in ts.iter().enumerate() {
            s.push_str(&format!(
                "  {:<3} {:<28} {:<26} {:<9} {:<16} {:>9}\n",
                i,
                t.name,
                t.ident,
                t.dtype.to_string(),
                format!("{:?}", t.shape),
                t.bytes()
            ));
        }
    };
    table(&mut s, "inputs", &desc.inputs);
    table(&mut s, "outputs", &desc.outputs);
    s.push('\n');
    let kmodel = matches!(desc.executor, Executor::Kmodel(_));
    if kmodel {
        // Parameters, C code and metadata memory do not apply: the kmodel section says it all.
    } else if desc.params.is_empty() {
        let c = &desc.code.constants;
        line(
            &mut s,
            "parameters",
            format!(
                "{} constant arrays compiled into the C, {} bytes",
                c.len(),
                c.iter().map(|c| c.bytes).sum::<u64>()
            ),
        );
    } else {
        let linked = desc.params.iter().filter(|p| p.linked.is_some()).count();
        line(
            &mut s,
            "parameters",
            format!(
                "{} tensors, {} bytes{}",
                desc.params.len(),
                desc.params.iter().map(|p| p.bytes()).sum::<u64>(),
                if linked > 0 { format!(" ({linked} linked into the C)") } else { String::new() }
            ),
        );
    }
    if !kmodel {
        line(
            &mut s,
            "memory",
            format!(
                "workspace {} bytes, constants {} bytes, io {} bytes (as recorded in metadata)",
                desc.memory.workspace_bytes, desc.memory.constants_bytes, desc.memory.io_bytes
            ),
        );
        line(&mut s, "code", format!("{} C files, {} object files", desc.code.sources.len(), desc.code.objects.len()));
    }
    if let Executor::Kmodel(k) = &desc.executor {
        kmodel_table(&mut s, k);
    }
    if !desc.facts.is_empty() {
        s.push_str("\ninferred\n");
        for f in &desc.facts {
            s.push_str(&format!("  {}: {} (from {})\n", f.what, f.value, f.source));
        }
    }
    for w in &desc.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    if !matches!(desc.executor, Executor::Kmodel(_)) {
        match crate::plan::split::refusal(desc) {
            None => {
                s.push_str("external     parameters can be split from the code (Params::External, cargo mlf split)\n")
            }
            Some(why) => s.push_str(&format!("external     parameters cannot be external: {why}\n")),
        }
    }
    for b in &desc.blockers {
        s.push_str(&format!("cannot build: {b}\n"));
    }
    s
}

/// Inspects any file mlf understands; returns the JSON report and a readable summary.
pub fn inspect_path(path: &Path, opts: &MlfOptions) -> Result<(Value, String)> {
    let detected = detect::detect_loaded(path)?;
    match detected.kind {
        FileKind::Mlf | FileKind::Kmodel => {
            let desc = crate::read::open_detected(path, detected, opts)?;
            Ok((report_json(&desc), report_table(&desc)))
        }
        FileKind::TvmModule => crate::cli::blob::inspect(path, &detected),
        FileKind::Params => params_report(path),
        FileKind::ParamPack => param_pack_report(&detected.into_archive(path)?),
    }
}

fn params_report(path: &Path) -> Result<(Value, String)> {
    use crate::error::Context;
    let data = crate::support::bytes::Bytes::new(std::fs::read(path).map_err(crate::Error::from).in_file(path)?);
    let tensors = crate::read::params::parse_params(&data).in_file(path)?;
    let list: Vec<Value> = tensors
        .iter()
        .map(|t| json!({"name": t.name, "dtype": t.dtype.to_string(), "shape": t.shape, "bytes": t.data.len()}))
        .collect();
    let total: usize = tensors.iter().map(|t| t.data.len()).sum();
    let mut table = format!(
        "file         {}\nformat       TVM parameter file, {} tensors, {total} bytes\n\n",
        path.display(),
        tensors.len()
    );
    for t in &tensors {
        table.push_str(&format!(
            "  {:<24} {:<9} {:<20} {:>9}\n",
            t.name,
            t.dtype.to_string(),
            format!("{:?}", t.shape),
            t.data.len()
        ));
    }
    Ok((json!({"format": "tvm-params", "count": tensors.len(), "bytes": total, "tensors": list}), table))
}

/// A split folder or packed archive: its parameters, checked against their files, and the code
/// targets it carries.
fn param_pack_report(archive: &crate::read::archive::Archive) -> Result<(Value, String)> {
    let path = archive.path();
    let entries = crate::read::param_pack::check_folder(archive)?;
    let mut targets: Vec<String> = archive
        .names()
        .filter_map(|n| n.strip_prefix("code/").and_then(|r| r.split('/').next()).map(str::to_string))
        .collect();
    targets.dedup();
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    let model = archive
        .get("configure.json")
        .and_then(|c| crate::read::json::parse(c).ok())
        .and_then(|v| v.get("model").and_then(|m| m.as_str()).map(str::to_string))
        .unwrap_or_default();
    let mut table = format!(
        "file         {}\nformat       mlf external parameters ({}), model `{model}`\nparameters   {} files, {total} bytes, every size and hash checked\ncode         {}\n\n",
        path.display(),
        if archive.kind() == crate::read::archive::ArchiveKind::Tar { "packed archive" } else { "split folder" },
        entries.len(),
        if targets.is_empty() { "none".to_string() } else { targets.join(", ") }
    );
    table.push_str(&format!("  {:<18} {:<9} {:<18} {:>9}  names\n", "identifier", "dtype", "shape", "bytes"));
    for e in &entries {
        table.push_str(&format!(
            "  {:<18} {:<9} {:<18} {:>9}  {}\n",
            e.id,
            e.dtype,
            format!("{:?}", e.shape),
            e.bytes,
            e.names.join(", ")
        ));
    }
    Ok((
        json!({"format": "mlf-params", "model": model, "count": entries.len(), "bytes": total, "params": entries, "code_targets": targets}),
        table,
    ))
}
