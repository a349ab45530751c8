//! `cargo mlf inspect`: a readable summary and a stable JSON report of a model.

use std::path::Path;

use serde_json::{Value, json};

use crate::backend;
use crate::build::targets::host_triple;
use crate::error::Result;
use crate::model::{ModelDesc, ModelFormat, TensorInfo};
use crate::read::detect::{self, FileKind};
use crate::read::mlf::ReadOptions;

fn tensors(ts: &[TensorInfo]) -> Value {
    Value::Array(
        ts.iter()
            .map(|t| json!({"name": t.name, "ident": t.ident, "dtype": t.dtype.to_string(), "shape": t.shape, "shape_source": t.shape_source, "dtype_source": t.dtype_source}))
            .collect(),
    )
}

/// The JSON report of an MLF model:
/// `{"format":"mlf","version":N,"model_name":S,"executor":"graph"|"aot","interface":S,
/// "inputs":[…],"outputs":[…],"params":{"count","bytes","linked"},"memory":{"workspace_bytes","constants_bytes"}, …}`.
pub fn report_json(desc: &ModelDesc) -> Value {
    let (format, version) = match desc.format {
        ModelFormat::Mlf { version } => ("mlf", version),
        ModelFormat::Relax => ("relax", 0),
        ModelFormat::Kmodel { version } => ("kmodel", version),
    };
    let (count, bytes, linked) = if desc.params.is_empty() {
        let c = &desc.code.constants;
        (c.len() as u64, c.iter().map(|c| c.bytes).sum::<u64>(), !c.is_empty())
    } else {
        let linked = desc.params.iter().all(|p| p.linked.is_some());
        (desc.params.len() as u64, desc.params.iter().map(|p| p.bytes()).sum::<u64>(), linked)
    };
    let backend = backend::of(desc);
    let mut v = json!({
        "format": format,
        "version": version,
        "model_name": desc.name,
        "executor": backend.kind(),
        "interface": backend.interface(),
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
        "external_params": match backend.external_refusal() {
            None => json!({"possible": true}),
            Some(why) => json!({"possible": false, "why": why}),
        },
    });
    let (key, section) = backend.inspect_json();
    v.as_object_mut().expect("object").insert(key.into(), section);
    if let Some(r) = planned(desc) {
        let planned = json!({
            "arena_bytes": r.ram.arena,
            "workspace_bytes": r.ram.workspace,
            "outputs_bytes": r.ram.outputs,
            "usmp_pool_bytes": r.ram.usmp_pool,
            "tvm_executor_bytes": r.ram.tvm_executor,
        });
        v.as_object_mut().expect("object").insert("planned".into(), planned);
    }
    v
}

/// The static memory mlf plans for the model (what the build step allocates; no C is
/// compiled, so without the C's own data): `None` when it cannot be planned.
fn planned(desc: &ModelDesc) -> Option<crate::plan::report::MemoryReport> {
    let host = host_triple().unwrap_or_default();
    backend::memory_report(desc, &desc.name, &host, None, None).ok()
}

/// `inspect`'s line on the planned RAM, beside what TVM recorded.
fn planned_line(desc: &ModelDesc) -> Option<String> {
    let r = planned(desc)?;
    let mut parts = vec![format!("arena {} bytes (ARENA_BYTES of the generated module", r.ram.arena)];
    if r.ram.workspace > 0 {
        parts.push(format!(", of it {} for TVMBackendAllocWorkspace", r.ram.workspace));
    }
    parts.push(")".into());
    if r.ram.usmp_pool > 0 {
        parts.push(format!(" + the C's USMP pool {} bytes", r.ram.usmp_pool));
    }
    if let Some(t) = r.ram.tvm_executor {
        parts.push(format!("; TVM's executor: {} bytes", t));
    }
    parts.push("; cargo mlf build adds the compiled C's own data".into());
    Some(parts.concat())
}

/// A human-readable summary.
pub fn report_table(desc: &ModelDesc) -> String {
    let mut s = String::new();
    let fmt = match desc.format {
        ModelFormat::Mlf { version } => format!("TVM Model Library Format, metadata version {version}"),
        ModelFormat::Relax => "TVM Relax export (export_library, TVM 0.25–0.27)".to_string(),
        ModelFormat::Kmodel { version } => format!("kmodel V{version}"),
    };
    let line = |s: &mut String, k: &str, v: String| s.push_str(&format!("{k:<12} {v}\n"));
    line(&mut s, "file", desc.path.display().to_string());
    line(&mut s, "format", fmt);
    line(&mut s, "model", desc.name.clone());
    let backend = backend::of(desc);
    line(&mut s, "executor", format!("{} (interface: {})", backend.kind(), backend.interface()));
    backend.inspect_head(&mut s);
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
    backend.inspect_body(&mut s);
    if let Some(planned) = planned_line(desc) {
        line(&mut s, "planned", planned);
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
    backend.inspect_tail(&mut s);
    for b in &desc.blockers {
        s.push_str(&format!("cannot build: {b}\n"));
    }
    s
}

/// Inspects any file mlf understands; returns the JSON report and a readable summary. For a
/// model, both say whether it runs on the host and on every device target, and why not.
pub fn inspect_path(path: &Path, opts: &ReadOptions) -> Result<(Value, String)> {
    let detected = detect::detect_loaded(path)?;
    match detected.kind {
        FileKind::Mlf | FileKind::Kmodel => {
            let desc = crate::read::open_detected(path, detected, opts)?;
            let mut json = report_json(&desc);
            let mut table = report_table(&desc);
            let runs = super::runs_on::runs_on(&desc, host_triple().as_deref());
            table.push_str(&super::runs_on::table(&runs));
            json.as_object_mut().expect("object").insert("runs_on".into(), super::runs_on::json(&runs));
            Ok((json, table))
        }
        FileKind::TvmModule => crate::cli::blob::inspect(path, &detected),
        FileKind::Params => params_report(path),
        FileKind::ParamPack => param_pack_report(&detected.into_archive(path)?),
    }
}

fn params_report(path: &Path) -> Result<(Value, String)> {
    use crate::error::Context;
    let data = crate::read::archive::read_limited(path, "parameter file")?;
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
        "file         {}\nformat       mlf external parameters ({}), model `{model}`\nparameters   {} files, {total} bytes, every size and hash checked\ncode         {}\n",
        path.display(),
        if archive.kind() == crate::read::archive::ArchiveKind::Tar { "packed archive" } else { "split folder" },
        entries.len(),
        if targets.is_empty() { "none".to_string() } else { targets.join(", ") }
    );
    let digest = crate::build::split_folder::config_digest(archive)?.map(|d| crate::plan::split::digest_hex(&d));
    // read_pack checked the header against the pack's bytes already.
    let header = archive
        .get(crate::read::param_pack::HEADER_MEMBER)
        .and_then(|b| b.as_slice().try_into().ok().and_then(|b| mlf_pack::PackHeader::fields(b).ok()));
    table.push_str(&format!("digest       {}\n", digest.as_deref().unwrap_or("none (split by an older mlf)")));
    if let Some(h) = &header {
        table.push_str(&format!(
            "header       sequence {}, {} bytes covered, {}\n",
            h.sequence,
            h.length,
            if h.signed { "signed (Ed25519)" } else { "unsigned" }
        ));
        table.push('\n');
    } else if archive.kind() == crate::read::archive::ArchiveKind::Tar {
        table.push_str("header       none (packed by an older mlf: FlashArchive::open refuses it)\n\n");
    } else {
        table.push('\n');
    }
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
        json!({"format": "mlf-params", "model": model, "digest": digest, "count": entries.len(), "bytes": total, "params": entries, "code_targets": targets,
               "header": header.map(|h| json!({"sequence": h.sequence, "length": h.length, "signed": h.signed, "digest": crate::plan::split::digest_hex(&h.digest)}))}),
        table,
    ))
}
