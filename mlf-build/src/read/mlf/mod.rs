//! Builds a [`ModelDesc`] from an MLF archive (tar or extracted directory), following the file
//! layout of every metadata version and inferring what metadata does not record.

mod aot;
mod aot_entry;
mod aot_io;
mod aot_types;
mod code;
mod crosscheck;
mod extents;
mod graph;
mod outputs;
pub mod usmp_reach;

pub use extents::{StoreCounts, kernel_stores_fit};

use super::archive::Archive;
use super::metadata::{ExecutorKind, Metadata, ModuleMeta};
use super::params;
use super::relay;
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::support::hash::{FNV_OFFSET, fnv1a};

/// Options for reading a model.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Which module of an MLF (metadata version 7) that holds several to read.
    pub module: Option<String>,
}

/// Reads the model of an MLF archive.
pub fn read(archive: &Archive, opts: &ReadOptions) -> Result<ModelDesc> {
    read_inner(archive, opts).in_file(archive.path())
}

fn read_inner(archive: &Archive, opts: &ReadOptions) -> Result<ModelDesc> {
    let Some(meta_bytes) = archive.get("metadata.json") else {
        let has_code = archive.names().any(|n| n.starts_with("codegen/"));
        return Err(if has_code {
            Error::missing(
                "metadata.json: this is generated code without the rest of an MLF (no metadata.json, graph or parameters); \
                 export the whole archive with tvm.micro.export_model_library_format",
            )
        } else {
            Error::missing("metadata.json: not a TVM Model Library Format archive")
        });
    };
    let meta = Metadata::parse(meta_bytes).in_member("metadata.json")?;
    let module = meta.module(opts.module.as_deref()).in_member("metadata.json")?;
    let m = module.name.as_str();
    let version = meta.version;
    let several = meta.modules.len() > 1;

    let mut desc = ModelDesc {
        path: archive.path().to_path_buf(),
        format: ModelFormat::Mlf { version },
        name: m.to_string(),
        executor: Executor::Kmodel(KmodelExec { version: 0, ..Default::default() }),
        inputs: Vec::new(),
        outputs: Vec::new(),
        params: Vec::new(),
        memory: memory_info(module),
        code: Code::default(),
        targets: module.targets.iter().map(|t| t.raw.clone()).collect(),
        facts: Vec::new(),
        warnings: archive.warnings().to_vec(),
        blockers: Vec::new(),
        content_hash: content_hash(archive),
    };
    if let Some(v) = &module.tvm_version {
        desc.fact("TVM version", v.clone(), "metadata.json external_dependencies");
    }

    // Code: every source and object of this module.
    let (code, blockers) = code::read_code(archive, m, several, desc.memory.constants_bytes)?;
    desc.code = code;
    desc.blockers.extend(blockers);
    let cpus: Vec<String> = module.targets.iter().filter_map(|t| t.option("mcpu").map(str::to_string)).collect();
    for c in cpus {
        desc.fact("target CPU", c, "metadata.json target");
    }

    // Relay signature (optional everywhere, but the main source of shapes for AOT).
    let relay_names = [format!("src/{m}.relay"), "src/relay.txt".to_string(), "relay.txt".to_string()];
    let relay = match archive.first_of(&relay_names.iter().map(String::as_str).collect::<Vec<_>>()) {
        Some((name, bytes)) => Some(relay::parse(bytes.as_str().in_member(name)?).in_member(name)?),
        None => None,
    };

    // Parameters.
    let params_name = format!("parameters/{m}.params");
    let params = match archive.get(&params_name) {
        Some(b) => Some(params::parse_params(b).in_member(&params_name)?),
        None => None,
    };

    let gname = match module.executor {
        ExecutorKind::Graph => Some(graph::read_graph(archive, module, version, params, relay.as_ref(), &mut desc)?),
        ExecutorKind::Aot => {
            aot::read_aot(archive, module, params, relay.as_ref(), &mut desc)?;
            None
        }
    };
    crosscheck::tensors_are_sized(&desc.inputs, &desc.outputs)?;
    crosscheck::dtypes_run(&desc)?;
    // Last: the dtypes of the entries are known to be whole bytes that run.
    if let (Some(gname), Executor::Graph(g)) = (gname, &desc.executor) {
        extents::kernel_stores_fit(&g.graph, &desc.code.sources, &gname).in_member(gname)?;
    }
    Ok(desc)
}

fn memory_info(module: &ModuleMeta) -> MemoryInfo {
    let main = module.memory.cpu_main().cloned().unwrap_or_default();
    MemoryInfo {
        workspace_bytes: main.workspace_size_bytes,
        constants_bytes: main.constants_size_bytes,
        io_bytes: main.io_size_bytes,
        operator_workspace: module
            .memory
            .operators
            .iter()
            .map(|o| (o.function_name.clone(), o.workspace_bytes))
            .collect(),
    }
}

fn content_hash(archive: &Archive) -> u64 {
    let mut h = FNV_OFFSET;
    for name in archive.names() {
        if name.starts_with("runtime/") || name.starts_with("templates/") {
            continue;
        }
        h = fnv1a(h, name.as_bytes());
        h = fnv1a(h, archive.get(name).map(|b| b.as_slice()).unwrap_or_default());
    }
    h
}
