//! `metadata.json` of every version TVM wrote (1 to 7).
//!
//! The version is read from `version` and cross-checked against the shape of the document
//! (`modules` → v7, array `memory` → v1, `runtimes` → v1–v4, `executors` → v5+, object `target`
//! → ≤ v5, array `target` → ≥ v6). Operator-style archives (`tvm.build` output) are refused.

use serde::Serialize;

use super::json::{self, J};
use super::target::Target;
use crate::error::{Error, ErrorKind, Result};

/// The executor a module was built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// Graph executor (`graph.json` + kernels).
    Graph,
    /// Ahead-of-time executor (the call sequence is in the C).
    Aot,
}

/// A parsed `metadata.json`.
#[derive(Clone, Debug)]
pub struct Metadata {
    /// `version` (1 to 7).
    pub version: u32,
    /// The modules: one before v7, one or more in v7 (in name order).
    pub modules: Vec<ModuleMeta>,
}

/// One module's metadata (the whole document before v7).
#[derive(Clone, Debug)]
pub struct ModuleMeta {
    /// `model_name` (in v7 also the key in `modules`).
    pub name: String,
    /// `runtimes` (v1–v4) / `executors` (v5+).
    pub executor: ExecutorKind,
    /// `target`: device-keyed object up to v5, list from v6.
    pub targets: Vec<Target>,
    /// `export_datetime`, as written (local time labelled `Z`).
    pub export_datetime: Option<String>,
    /// `style` (v4+).
    pub style: Option<String>,
    /// `memory`.
    pub memory: MemoryMeta,
    /// TVM version from `external_dependencies` (AOT + crt builds from 2022 on).
    pub tvm_version: Option<String>,
}

/// `memory` of a module.
#[derive(Clone, Debug, Default)]
pub struct MemoryMeta {
    /// `sids` (graph only; sizes are unreliable, see the format notes).
    pub sids: Vec<SidMeta>,
    /// `functions.main[]`, one per device.
    pub main: Vec<MainMemory>,
    /// `functions.operator_functions[]`.
    pub operators: Vec<OperatorWorkspace>,
}

impl MemoryMeta {
    /// The CPU (`device == 1`) entry of `functions.main`, if any.
    pub fn cpu_main(&self) -> Option<&MainMemory> {
        self.main.iter().find(|m| m.device == 1).or(self.main.first())
    }

    /// Workspace of an operator function on the CPU, if recorded.
    pub fn operator_workspace(&self, name: &str) -> Option<u64> {
        self.operators.iter().find(|o| o.function_name == name).map(|o| o.workspace_bytes)
    }
}

/// One `memory.sids[]` entry.
#[derive(Clone, Debug)]
pub struct SidMeta {
    /// `storage_id`.
    pub storage_id: u64,
    /// `size_bytes` (often wrong: TVM indexes shapes by storage id).
    pub size_bytes: u64,
    /// `input_binding`.
    pub input_binding: Option<String>,
}

/// One `memory.functions.main[]` entry.
#[derive(Clone, Debug, Default)]
pub struct MainMemory {
    /// `device` (1 = CPU).
    pub device: i64,
    /// `workspace_size_bytes`.
    pub workspace_size_bytes: u64,
    /// `constants_size_bytes`.
    pub constants_size_bytes: u64,
    /// `io_size_bytes`.
    pub io_size_bytes: u64,
    /// `inputs` (TVM ≥ 0.11): raw names in **alphabetical** order.
    pub inputs: Vec<IoMeta>,
    /// `outputs` (TVM ≥ 0.11): raw names in alphabetical order.
    pub outputs: Vec<IoMeta>,
}

/// One entry of `main[].inputs` / `main[].outputs`.
#[derive(Clone, Debug)]
pub struct IoMeta {
    /// Raw tensor name.
    pub name: String,
    /// dtype string.
    pub dtype: String,
    /// Size in bytes.
    pub size: u64,
}

/// One `operator_functions[]` entry, reduced to its CPU workspace.
#[derive(Clone, Debug)]
pub struct OperatorWorkspace {
    /// `function_name`.
    pub function_name: String,
    /// Workspace on the CPU (device 1), in bytes.
    pub workspace_bytes: u64,
}

impl Metadata {
    /// Parses `metadata.json`.
    pub fn parse(text: &[u8]) -> Result<Metadata> {
        let value = json::parse(text)?;
        let root = J::root(&value);
        if root.v.as_object().is_none() {
            return Err(root.err("expected a JSON object at the top level"));
        }
        // Operator-style archives stay flat even when `version` is 7.
        if let Some(style) = root.opt("style")? {
            if style.str()? == "operator" {
                return Err(style.err_kind(ErrorKind::OperatorStyle));
            }
        }
        let vj = root.get("version")?;
        let version = vj.i64()?;
        if !(1..=7).contains(&version) {
            return Err(vj.err_kind(ErrorKind::UnsupportedVersion(version)));
        }
        let version = version as u32;
        if version == 7 {
            let modules = root.get("modules").map_err(|_| {
                let mut e = Error::invalid("version 7 requires a `modules` object");
                e.field = Some("modules".into());
                e
            })?;
            let mut out = Vec::new();
            for (name, m) in modules.entries()? {
                let meta = parse_module(&m, version)?;
                if meta.name != name {
                    return Err(m
                        .get("model_name")?
                        .err(format!("model_name {:?} differs from its key {name:?} in `modules`", meta.name)));
                }
                out.push(meta);
            }
            if out.is_empty() {
                return Err(modules.err("no modules"));
            }
            Ok(Metadata { version, modules: out })
        } else {
            if root.has("modules") {
                return Err(root
                    .get("modules")?
                    .err(format!("`modules` appears only in version 7, but version is {version}")));
            }
            Ok(Metadata { version, modules: vec![parse_module(&root, version)?] })
        }
    }

    /// Picks a module: the only one, or the one named `name`. Several modules and no name is an
    /// error listing the names.
    pub fn module(&self, name: Option<&str>) -> Result<&ModuleMeta> {
        let names = || self.modules.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
        match name {
            Some(n) => self
                .modules
                .iter()
                .find(|m| m.name == n)
                .ok_or_else(|| Error::new(ErrorKind::NoSuchModule { name: n.to_string(), available: names() })),
            None if self.modules.len() == 1 => Ok(&self.modules[0]),
            None => Err(Error::new(ErrorKind::AmbiguousModule(names()))),
        }
    }
}

fn parse_module(m: &J<'_>, version: u32) -> Result<ModuleMeta> {
    let name = m.get("model_name")?.str()?.to_string();
    // Executor: `runtimes` up to v4, `executors` from v5.
    let (exec_key, other_key) = if version <= 4 { ("runtimes", "executors") } else { ("executors", "runtimes") };
    if m.has(other_key) && !m.has(exec_key) {
        return Err(m
            .get(other_key)?
            .err(format!("`{other_key}` does not belong to metadata version {version} (expected `{exec_key}`)")));
    }
    let execs = m.get(exec_key)?;
    let list = execs.array()?;
    if list.is_empty() {
        return Err(execs.err_kind(ErrorKind::OperatorStyle));
    }
    let executor = match list[0].str()? {
        "graph" => ExecutorKind::Graph,
        "aot" => ExecutorKind::Aot,
        other => return Err(list[0].err(format!("unknown executor {other:?} (expected \"graph\" or \"aot\")"))),
    };
    if list.len() > 1 {
        return Err(execs.err("more than one executor listed"));
    }
    // Target: object keyed by device type up to v5, list from v6.
    let tj = m.get("target")?;
    let targets = match (tj.v.is_object(), tj.v.is_array()) {
        (true, _) => {
            if version >= 6 {
                return Err(tj.err(format!("metadata version {version} writes `target` as a list, found an object")));
            }
            let mut t = Vec::new();
            for (dev, s) in tj.entries()? {
                let device: i64 = dev.parse().map_err(|_| s.err(format!("device key {dev:?} is not a number")))?;
                t.push(Target::parse(s.str()?, Some(device)));
            }
            t
        }
        (_, true) => {
            if version <= 5 {
                return Err(tj.err(format!("metadata version {version} writes `target` as an object, found a list")));
            }
            tj.array()?.iter().map(|s| Ok(Target::parse(s.str()?, None))).collect::<Result<_>>()?
        }
        _ => return Err(tj.err("expected an object or a list of target strings")),
    };
    let style = match m.opt("style")? {
        Some(s) => {
            let s = s.str()?.to_string();
            if s != "full-model" {
                return Err(m.get("style")?.err(format!("unknown style {s:?}")));
            }
            Some(s)
        }
        None => None,
    };
    let export_datetime = m.opt("export_datetime")?.map(|d| d.str().map(str::to_string)).transpose()?;
    let memory = parse_memory(&m.get("memory")?, version)?;
    let mut tvm_version = None;
    if let Some(deps) = m.opt("external_dependencies")? {
        for d in deps.array()? {
            if d.opt("short_name")?.map(|s| s.str()).transpose()? == Some("tvm_standalone_crt") {
                tvm_version = d.opt("version_spec")?.map(|s| s.str().map(str::to_string)).transpose()?;
            }
        }
    }
    Ok(ModuleMeta { name, executor, targets, export_datetime, style, memory, tvm_version })
}

fn parse_memory(mem: &J<'_>, version: u32) -> Result<MemoryMeta> {
    if mem.v.is_array() {
        if version != 1 {
            return Err(mem.err(format!("`memory` is a list only in metadata version 1 (this is version {version})")));
        }
        return Ok(MemoryMeta { sids: parse_sids(mem)?, ..Default::default() });
    }
    if version == 1 {
        return Err(mem.err("metadata version 1 writes `memory` as a list"));
    }
    let sids = match mem.opt("sids")? {
        Some(s) => parse_sids(&s)?,
        None => Vec::new(),
    };
    let mut main = Vec::new();
    let mut operators = Vec::new();
    if let Some(funcs) = mem.opt("functions")? {
        if let Some(mj) = funcs.opt("main")? {
            for e in mj.array()? {
                main.push(parse_main(&e)?);
            }
        }
        if let Some(oj) = funcs.opt("operator_functions")? {
            for o in oj.array()? {
                let function_name = o.get("function_name")?.str()?.to_string();
                let mut workspace_bytes = 0;
                if let Some(ws) = o.opt("workspace")? {
                    for w in ws.array()? {
                        let device = w.get("device")?.i64()?;
                        if device == 1 {
                            workspace_bytes = workspace_bytes.max(w.get("workspace_size_bytes")?.u64()?);
                        }
                    }
                }
                operators.push(OperatorWorkspace { function_name, workspace_bytes });
            }
        }
    }
    Ok(MemoryMeta { sids, main, operators })
}

fn parse_sids(j: &J<'_>) -> Result<Vec<SidMeta>> {
    j.array()?
        .iter()
        .map(|s| {
            Ok(SidMeta {
                storage_id: s.get("storage_id")?.u64()?,
                size_bytes: s.get("size_bytes")?.u64()?,
                input_binding: s.opt("input_binding")?.map(|b| b.str().map(str::to_string)).transpose()?,
            })
        })
        .collect()
}

fn parse_main(e: &J<'_>) -> Result<MainMemory> {
    let io = |key: &str| -> Result<Vec<IoMeta>> {
        let Some(map) = e.opt(key)? else { return Ok(Vec::new()) };
        map.entries()?
            .into_iter()
            .map(|(name, t)| {
                Ok(IoMeta {
                    name: name.to_string(),
                    dtype: t.get("dtype")?.str()?.to_string(),
                    size: t.get("size")?.u64()?,
                })
            })
            .collect()
    };
    Ok(MainMemory {
        device: e.get("device")?.i64()?,
        workspace_size_bytes: e.get("workspace_size_bytes")?.u64()?,
        constants_size_bytes: e.opt("constants_size_bytes")?.map(|v| v.u64()).transpose()?.unwrap_or(0),
        io_size_bytes: e.opt("io_size_bytes")?.map(|v| v.u64()).transpose()?.unwrap_or(0),
        inputs: io("inputs")?,
        outputs: io("outputs")?,
    })
}
