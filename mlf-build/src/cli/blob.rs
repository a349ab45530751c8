//! `cargo mlf inspect` for TVM exports: the JSON report and the readable table.
//!
//! JSON: `{"format":"tvm-module","layout":"legacy"|"ffi-0.21"|"ffi"|null,"modules":[{"index",
//! "type_key","bytes",…}],"import_tree":{…},"abi":{"generation",…},"buildable":false,
//! "blockers":[…]}`, and for a graph executor factory also `"inputs"`, `"outputs"` and
//! `"params":{"count","bytes"}` like an MLF report.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::error::{Context, Result};
use crate::model::{Graph, NodeOp};
use crate::read::blob::abi::{Generation, TVM_FFI_REFUSAL};
use crate::read::blob::device::device_blocker;
use crate::read::blob::payload::{DeviceCode, Factory, ModuleClass, Payload};
use crate::read::blob::source::{Found, Scan, scan_detected};
use crate::read::blob::tree::implicit_root_json;
use crate::read::blob::{Blob, Module, parse};
use crate::read::detect::Detected;
use crate::read::graph::{default_output_names, unused_param};

/// Inspects a TVM export (`.so`, `.o`, `devc.c`, raw blob, `.tar`) that detection classified:
/// the JSON report and a table.
pub fn inspect(path: &Path, detected: &Detected) -> Result<(Value, String)> {
    let scan = scan_detected(path, detected)?;
    let mut blobs = Vec::new();
    for f in &scan.found {
        blobs.push(parse(&f.bytes, f.layout).in_member(f.place()).in_file(path)?);
    }
    Ok(report(path, &scan, &blobs))
}

/// Payload details for the report.
fn detail(m: &Module) -> Value {
    match &m.decoded {
        Payload::Factory(f) => json!({
            "module_name": f.module_name,
            "params": f.params.len(),
            "param_bytes": f.params.iter().map(|p| p.data.len() as u64).sum::<u64>(),
            "graph_json_bytes": f.graph_json.as_ref().map(|g| g.len()),
        }),
        Payload::CSource(c) => json!({
            "fmt": c.fmt, "functions": c.func_names, "const_vars": c.const_vars, "code_bytes": c.code.len(),
        }),
        Payload::ConstLoader(c) => json!({
            "arrays": c.arrays.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
            "array_bytes": c.arrays.iter().map(|a| a.data.len() as u64).sum::<u64>(),
            "symbols": c.symbols,
        }),
        Payload::Device(d) => json!({
            "fmt": d.fmt,
            "functions": d.functions.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            "code_bytes": d.code.bytes(),
            "code": match d.code { DeviceCode::Data(_) => "data", DeviceCode::Sources(_) => "per-function sources", DeviceCode::Spirv(_) => "spirv shaders" },
        }),
        Payload::Relax(x) => json!({
            "magic": x.magic.map(|m| format!("{m:#018x}")),
            "version": x.version,
            "executable_bytes": x.code.len(),
        }),
        Payload::Json(j) => json!({
            "symbol": j.symbol, "graph_json_bytes": j.graph_json.len(), "const_names": j.const_names,
        }),
        Payload::Opaque => json!({"decoded": false}),
        Payload::Lib | Payload::MetadataModule => Value::Null,
    }
}

fn module_json(m: &Module) -> Value {
    let mut v = json!({
        "index": m.index,
        "type_key": m.type_key,
        "bytes": m.bytes(),
        "offset": m.offset,
        "class": m.class().name(),
    });
    let d = detail(m);
    if !d.is_null() {
        v["detail"] = d;
    }
    v
}

/// Inputs, outputs and parameter totals of a graph executor factory.
struct FactoryIo {
    inputs: Vec<Value>,
    outputs: Vec<Value>,
    nodes: usize,
    operators: usize,
}

fn factory_io(f: &Factory, warnings: &mut Vec<String>) -> Option<FactoryIo> {
    let g = f.graph_json.as_ref()?;
    let graph = match Graph::parse(g) {
        Ok(g) => g,
        Err(e) => {
            warnings.push(format!("the factory's graph JSON cannot be read: {e}"));
            return None;
        }
    };
    let split = graph.split_args(&f.params);
    warnings.extend(split.mismatches.iter().map(|m| m.message("the factory")));
    warnings.extend(split.unused.iter().map(|name| unused_param(name)));
    let tensor = |name: &str, eid: usize| json!({"name": name, "dtype": graph.dltype[eid].to_string(), "shape": graph.shape[eid]});
    let inputs = split.inputs.iter().map(|&nid| tensor(&graph.nodes[nid].name, graph.node_row_ptr[nid])).collect();
    let names = default_output_names(graph.heads.len());
    let outputs = graph.heads.iter().zip(&names).map(|(h, name)| tensor(name, graph.eid(*h))).collect();
    let operators = graph.nodes.iter().filter(|n| matches!(n.op, NodeOp::Call { .. })).count();
    Some(FactoryIo { inputs, outputs, nodes: graph.nodes.len(), operators })
}

/// The report of a scanned export and the blobs it holds: the JSON report and the table.
fn report(path: &Path, scan: &Scan, blobs: &[Blob]) -> (Value, String) {
    let (mut warnings, blockers) = findings(scan, blobs);
    let primary: Option<(&Found, &Blob)> = scan.found.first().zip(blobs.first());
    let factory = primary.and_then(|(_, b)| {
        b.modules.iter().find_map(|m| match &m.decoded {
            Payload::Factory(f) => Some((m.type_key.as_str(), f)),
            _ => None,
        })
    });
    let io = factory.and_then(|(_, f)| factory_io(f, &mut warnings));
    let relax = primary.and_then(|(_, b)| {
        b.modules.iter().find_map(|m| match &m.decoded {
            Payload::Relax(x) => Some(crate::cli::relax::section(&x.code)),
            _ => None,
        })
    });
    let mut blockers = blockers;
    let mut runs = None;
    if let Some(section) = &relax {
        // A Relax export is the Relax executor's to build: the generic refusals do not apply.
        blockers.retain(|b| b != TVM_FFI_REFUSAL && !b.starts_with(NOT_MLF));
        blockers.splice(0..0, section.blocker.clone());
        if section.blocker.is_none() {
            // The program lowers: the file builds when it is a whole export (kernels beside the
            // program), and says why not when it is a part of one.
            // Whole, it is buildable when mlf can plan it too (kernels in an object that take
            // scratch memory of sizes only their machine code states cannot be planned).
            // The model's own blockers (float16 C kernels, say) too.
            // Planned, it says where it runs as an MLF archive does (the build's own checks: an
            // LLVM object's architecture, core and float ABI against each target).
            let planned = crate::read::open(path, &crate::read::ReadOptions::default()).and_then(|desc| {
                crate::backend::of(&desc).memory(&desc.name, "", None)?;
                Ok(desc)
            });
            match planned {
                Err(e) => blockers.insert(0, e.to_string()),
                Ok(desc) => {
                    blockers.extend(desc.blockers.iter().cloned());
                    let host = crate::build::targets::host_triple();
                    runs = Some(crate::cli::runs_on::runs_on(&desc, host.as_deref()));
                }
            }
        }
    }
    let r = Report { path, scan, primary, factory, io, warnings, blockers };
    let (mut json, mut table) = (r.json(), r.table());
    if let Some(section) = relax {
        json.as_object_mut().expect("object").insert("relax".into(), section.json);
        let at = table.find("\n\n").map_or(table.len(), |i| i + 1);
        table.insert_str(at, &section.table);
    }
    if let Some(runs) = runs {
        while table.ends_with("\n\n") {
            table.pop();
        }
        table.push_str(&crate::cli::runs_on::table(&runs));
        json.as_object_mut().expect("object").insert("runs_on".into(), crate::cli::runs_on::json(&runs));
    }
    (json, table)
}

/// The start of the refusal of an export that is not an MLF archive.
const NOT_MLF: &str = "an export_library artifact is not a Model Library Format archive";

/// Why the export cannot be built, and what else was found (other blobs, payload warnings).
fn findings(scan: &Scan, blobs: &[Blob]) -> (Vec<String>, Vec<String>) {
    let mut warnings: Vec<String> = Vec::new();
    let mut blockers: Vec<String> = Vec::new();
    if scan.abi.generation == Generation::TvmFfi {
        blockers.push(TVM_FFI_REFUSAL.to_string());
    }
    blockers.push(format!("{NOT_MLF}: mlf builds models from MLF (tvm.micro.export_model_library_format, TVM ≤ 0.18)"));
    for (f, b) in scan.found.iter().zip(blobs).skip(1) {
        warnings.push(format!(
            "another blob at {} ({} layout, {} bytes, {} modules) is not reported in detail",
            f.place(),
            b.layout.name(),
            b.bytes.len(),
            b.modules.len()
        ));
    }
    for (f, b) in scan.found.iter().zip(blobs) {
        let device: Vec<(&str, u64)> = b
            .modules
            .iter()
            .filter(|m| m.class() == ModuleClass::Device)
            .map(|m| (m.type_key.as_str(), m.bytes()))
            .collect();
        if !device.is_empty() {
            blockers.push(device_blocker(&f.place(), &device));
        }
        warnings.extend(b.warnings.iter().cloned());
    }
    (warnings, blockers)
}

/// What the report of an export is made from.
struct Report<'a> {
    path: &'a Path,
    scan: &'a Scan,
    /// The first blob found, with where it was.
    primary: Option<(&'a Found, &'a Blob)>,
    /// The graph executor factory among its modules, with its type key.
    factory: Option<(&'a str, &'a Factory)>,
    /// The factory graph's inputs and outputs.
    io: Option<FactoryIo>,
    warnings: Vec<String>,
    blockers: Vec<String>,
}

impl Report<'_> {
    /// The JSON report.
    fn json(&self) -> Value {
        let (path, scan, primary, abi) = (self.path, self.scan, self.primary, &self.scan.abi);
        let mut v = json!({
            "format": "tvm-module",
            "file": path.display().to_string(),
            "container": scan.container,
            "layout": primary.map(|(_, b)| b.layout.name()),
            "modules": primary.map(|(_, b)| b.modules.iter().map(module_json).collect::<Vec<_>>()).unwrap_or_default(),
            "import_tree": primary.map(|(_, b)| match &b.import_tree {
                Some(t) => t.to_json(&b.modules),
                None => implicit_root_json(&b.modules),
            }),
            "abi": {"generation": abi.generation.name(), "description": abi.generation.describe(), "evidence": abi.evidence},
            "buildable": self.blockers.is_empty(),
        });
        let obj = v.as_object_mut().expect("object literal");
        if !scan.members.is_empty() {
            obj.insert(
                "members".into(),
                scan.members.iter().map(|(n, k)| json!({"name": n, "kind": k})).collect::<Vec<_>>().into(),
            );
        }
        if let Some((f, b)) = primary {
            obj.insert(
                "blob".into(),
                json!({
                    "symbol": f.symbol, "member": f.member, "location": f.location,
                    "bytes": b.bytes.len(), "tvm_versions": b.layout.tvm_versions(),
                    "framing": b.framing,
                }),
            );
        }
        if let Some((key, f)) = self.factory {
            obj.insert("executor".into(), json!(if f.graph_json.is_some() { "graph" } else { "aot" }));
            obj.insert("factory".into(), json!(key));
            obj.insert("module_name".into(), json!(f.module_name));
            obj.insert(
                "params".into(),
                json!({"count": f.params.len(), "bytes": f.params.iter().map(|p| p.data.len() as u64).sum::<u64>()}),
            );
            if let Some(io) = &self.io {
                obj.insert("inputs".into(), io.inputs.clone().into());
                obj.insert("outputs".into(), io.outputs.clone().into());
                obj.insert("graph".into(), json!({"nodes": io.nodes, "operators": io.operators}));
            }
        }
        obj.insert("blockers".into(), self.blockers.clone().into());
        obj.insert("warnings".into(), self.warnings.clone().into());
        v
    }

    /// The readable table.
    fn table(&self) -> String {
        let (scan, abi) = (self.scan, &self.scan.abi);
        let mut s = String::new();
        line(&mut s, "file", self.path.display().to_string());
        line(&mut s, "format", format!("TVM module export ({})", scan.container));
        line(&mut s, "abi", abi.generation.describe().to_string());
        for e in &abi.evidence {
            line(&mut s, "", format!("evidence: {e}"));
        }
        for (n, k) in &scan.members {
            line(&mut s, "member", format!("{n} ({k})"));
        }
        match self.primary {
            None => {
                line(&mut s, "blob", "none (the module imports nothing, so export_library embedded no blob)".into())
            }
            Some((f, b)) => blob_table(&mut s, f, b),
        }
        if let Some((key, f)) = self.factory {
            factory_table(&mut s, key, f, self.io.as_ref());
        }
        s.push('\n');
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        for b in &self.blockers {
            let _ = writeln!(s, "cannot build: {b}");
        }
        s
    }
}

/// One line of the table: key, value.
fn line(s: &mut String, k: &str, v: String) {
    let _ = writeln!(s, "{k:<12} {v}");
}

/// The table's lines on a blob: where it is, its modules and their import tree.
fn blob_table(s: &mut String, f: &Found, b: &Blob) {
    let place = format!(
        "{}, {} layout ({}), {} bytes, {}",
        f.place(),
        b.layout.name(),
        b.layout.tvm_versions(),
        b.bytes.len(),
        f.location
    );
    line(s, "blob", place);
    let _ = writeln!(s, "\nmodules\n  {:<3} {:<26} {:<16} {:>9}  detail", "#", "type key", "class", "bytes");
    for m in &b.modules {
        let d = detail(m);
        let d = if d.is_null() { String::new() } else { d.to_string() };
        let d = if d.len() > 100 { format!("{}…", d.chars().take(100).collect::<String>()) } else { d };
        let _ = writeln!(s, "  {:<3} {:<26} {:<16} {:>9}  {d}", m.index, m.type_key, m.class().name(), m.bytes());
    }
    s.push_str("\nimport tree\n");
    match &b.import_tree {
        Some(t) => {
            for l in t.to_lines(&b.modules) {
                let _ = writeln!(s, "  {l}");
            }
        }
        None => {
            s.push_str("  (no _import_tree: every module is an import of the host library)\n");
            for m in &b.modules {
                let _ = writeln!(s, "  _lib → {} {}", m.index, m.type_key);
            }
        }
    }
}

/// The table's lines on a graph executor factory: its inputs, outputs, graph and parameters.
fn factory_table(s: &mut String, key: &str, f: &Factory, io: Option<&FactoryIo>) {
    let _ = writeln!(s, "\n{key} (module {:?})", f.module_name);
    if let Some(io) = io {
        for (title, list) in [("inputs", &io.inputs), ("outputs", &io.outputs)] {
            let _ = writeln!(s, "{title}");
            for (i, t) in list.iter().enumerate() {
                let (name, dtype) = (t["name"].as_str().unwrap_or(""), t["dtype"].as_str().unwrap_or(""));
                let _ = writeln!(s, "  {:<3} {:<28} {:<9} {}", i, name, dtype, t["shape"]);
            }
        }
        line(s, "graph", format!("{} nodes, {} operator calls", io.nodes, io.operators));
    }
    let bytes: u64 = f.params.iter().map(|p| p.data.len() as u64).sum();
    line(s, "parameters", format!("{} tensors, {bytes} bytes", f.params.len()));
}
