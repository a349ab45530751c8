//! Builds a [`ModelDesc`] from an MLF archive (tar or extracted directory), following the file
//! layout of every metadata version and inferring what metadata does not record.

use std::collections::BTreeMap;

use crate::archive::Archive;
use crate::dtype::DType;
use crate::error::{Context, Error, Result};
use crate::format::csource::{CFile, CFunction};
use crate::format::graph::{Graph, NodeOp, default_output_names, unused_param};
use crate::format::header::InterfaceHeader;
use crate::format::metadata::{ExecutorKind, Metadata, ModuleMeta};
use crate::format::params::{self, ParamTensor};
use crate::format::relay::{self, RelayMain, TensorType};
use crate::model::*;
use crate::names;

/// Options for reading an MLF.
#[derive(Clone, Debug, Default)]
pub struct MlfOptions {
    /// Which module of a v7 archive with several modules to read.
    pub module: Option<String>,
}

/// Reads the model of an MLF archive.
pub fn read(archive: &Archive, opts: &MlfOptions) -> Result<ModelDesc> {
    read_inner(archive, opts).in_file(archive.path())
}

fn read_inner(archive: &Archive, opts: &MlfOptions) -> Result<ModelDesc> {
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
        executor: Executor::Kmodel(crate::kmodel::KmodelExec { version: 0, ..Default::default() }),
        inputs: Vec::new(),
        outputs: Vec::new(),
        params: Vec::new(),
        memory: memory_info(module),
        code: Code::default(),
        targets: module.targets.clone(),
        facts: Vec::new(),
        warnings: archive.warnings().to_vec(),
        blockers: Vec::new(),
        content_hash: content_hash(archive),
    };
    if let Some(v) = &module.tvm_version {
        desc.fact("TVM version", v.clone(), "metadata.json external_dependencies");
    }

    // Code: every source and object of this module.
    let module_prefix = format!("{m}_");
    let mine = |name: &str| -> bool {
        let file = name.rsplit('/').next().unwrap_or(name);
        !several || file.starts_with(&module_prefix)
    };
    for (member, bytes) in archive.files_in("codegen/host/src", &[".c", ".cc", ".cpp"]) {
        if !mine(member) {
            continue;
        }
        let text = bytes.as_str().in_member(member)?;
        desc.code.sources.push(CSource { member: member.to_string(), bytes: bytes.clone(), scan: CFile::scan(text) });
    }
    for (member, bytes) in archive.files_in("codegen/host/lib", &[".o", ".obj"]) {
        if mine(member) {
            desc.code.objects.push(ObjectFile { member: member.to_string(), bytes: bytes.clone() });
        }
    }
    for name in archive.names() {
        if let Some(rel) = name.strip_prefix("codegen/host/include/") {
            desc.code.headers.push((rel.to_string(), archive.get(name).expect("listed").clone()));
        }
    }
    // A module blob in the code (never written by TVM into an MLF) must not be dropped silently.
    let embedded = crate::format::blob::device::device_modules_in_code(&desc.code)?;
    desc.blockers.extend(crate::format::blob::device::blockers(&embedded));
    desc.code.constants = c_constants(&desc.code.sources, desc.memory.constants_bytes)?;
    if desc.code.sources.is_empty() && desc.code.objects.is_empty() {
        return Err(Error::missing(format!(
            "generated code: no codegen/host/src/*.c and no codegen/host/lib/*.o{}",
            if several { format!(" for module {m}") } else { String::new() }
        )));
    }
    let cpus: Vec<String> = desc.targets.iter().filter_map(|t| t.option("mcpu").map(str::to_string)).collect();
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

    match module.executor {
        ExecutorKind::Graph => read_graph(archive, module, version, params, relay.as_ref(), &mut desc)?,
        ExecutorKind::Aot => read_aot(archive, module, params, relay.as_ref(), &mut desc)?,
    }
    Ok(desc)
}

/// Constant arrays defined in the C, with their sizes. An error when a size, or the total that
/// reports and budgets add up, does not fit in a `u64` (a damaged array length).
fn c_constants(sources: &[CSource], constants_size_bytes: u64) -> Result<Vec<CConstant>> {
    let mut out: Vec<CConstant> = Vec::new();
    let mut total = 0u64;
    let mut push = |c: CConstant, what: String| -> Result<()> {
        total = c.bytes.checked_add(total).ok_or_else(|| {
            Error::invalid(format!("{what}: the constants in the C add up to more than 2^64 bytes"))
                .in_member(c.member.clone())
        })?;
        out.push(c);
        Ok(())
    };
    for s in sources {
        for g in &s.scan.globals {
            if g.is_extern {
                continue;
            }
            if g.name == "global_const_workspace" {
                let what = format!("{} ({constants_size_bytes} bytes)", g.name);
                push(
                    CConstant {
                        name: g.name.clone(),
                        member: s.member.clone(),
                        bytes: constants_size_bytes,
                        kind: ConstantKind::Pool,
                    },
                    what,
                )?;
                continue;
            }
            let is_const = g.ty.split_whitespace().any(|w| w == "const");
            let looks_like_weights = g.name.starts_with("__tvm_param__")
                || g.name.contains("fused_constant")
                || g.name.contains("_constant");
            if !is_const || !looks_like_weights {
                continue;
            }
            let elem = match g.ty.split_whitespace().last().unwrap_or("") {
                "float" | "int32_t" | "uint32_t" | "int" => 4,
                "double" | "int64_t" | "uint64_t" => 8,
                "int16_t" | "uint16_t" | "half" => 2,
                "int8_t" | "uint8_t" | "char" => 1,
                _ => continue,
            };
            if let Some(n) = g.array_len {
                let what = format!("{} ({n} elements of {elem} bytes)", g.name);
                let bytes = n.checked_mul(elem).ok_or_else(|| {
                    Error::invalid(format!("{what}: the array is larger than 2^64 bytes")).in_member(s.member.clone())
                })?;
                push(
                    CConstant {
                        name: g.name.clone(),
                        member: s.member.clone(),
                        bytes,
                        kind: ConstantKind::StaticArray,
                    },
                    what,
                )?;
            }
        }
    }
    Ok(out)
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

fn read_graph(
    archive: &Archive,
    module: &ModuleMeta,
    version: u32,
    params: Option<Vec<ParamTensor>>,
    relay: Option<&RelayMain>,
    desc: &mut ModelDesc,
) -> Result<()> {
    let m = module.name.as_str();
    let v7 = format!("executor-config/graph/{m}.graph");
    let candidates = [v7.as_str(), "executor-config/graph/graph.json", "runtime-config/graph/graph.json"];
    let (gname, gbytes) = archive.first_of(&candidates).ok_or_else(|| {
        Error::missing(format!(
            "graph config (looked for {}; metadata version {version} says the executor is graph)",
            candidates.join(", ")
        ))
    })?;
    let graph = Graph::parse(gbytes).in_member(gname)?;
    let params_name = format!("parameters/{m}.params");
    let params = params.ok_or_else(|| {
        Error::missing(format!("member {params_name} (a graph build always writes its parameters, even when empty)"))
    })?;

    // Linked parameters (TVM 0.8 `_lookup_linked_param`): storage id → C symbol.
    let mut linked: BTreeMap<u64, String> = BTreeMap::new();
    for s in &desc.code.sources {
        linked.extend(s.scan.linked_params.iter().map(|(k, v)| (*k, v.clone())));
    }

    // Bind every arg node: a parameter when `.params` has its name, else an input.
    let split = graph.split_args(&params);
    if let Some(m) = split.mismatches.first() {
        return Err(Error::mismatch(m.message(&params_name)).in_member(gname));
    }
    let mut bindings = BTreeMap::new();
    for &(nid, pi) in &split.params {
        let p = &params[pi];
        bindings.insert(nid, ArgBinding::Param(desc.params.len()));
        let sid = graph.storage_id[graph.node_row_ptr[nid]] as u64;
        desc.params.push(crate::model::ParamInfo {
            name: p.name.clone(),
            dtype: p.dtype,
            shape: p.shape.clone(),
            data: p.data.clone(),
            linked: linked.get(&sid).cloned(),
        });
    }
    let mut inputs = Vec::new();
    for &nid in &split.inputs {
        bindings.insert(nid, ArgBinding::Input(inputs.len()));
        let eid = graph.node_row_ptr[nid];
        inputs.push((graph.nodes[nid].name.clone(), graph.dltype[eid], graph.shape[eid].clone()));
    }
    for name in &split.unused {
        desc.warnings.push(format!("{params_name}: {}", unused_param(name)));
    }
    if !linked.is_empty() {
        desc.fact("parameters", "linked into the C (_lookup_linked_param); .params is a duplicate", "C source");
    }
    let raw: Vec<&str> = inputs.iter().map(|(n, ..)| n.as_str()).collect();
    let idents = names::unique_idents(&raw).at("inputs")?;
    desc.inputs = inputs
        .into_iter()
        .zip(idents)
        .map(|((name, dtype, shape), ident)| TensorInfo {
            name,
            ident,
            dtype,
            shape,
            shape_source: "graph config".into(),
        })
        .collect();

    // Outputs: heads, named from relay `output_tensor_names` or TVM's convention.
    let out_names = output_names(graph.heads.len(), relay, module);
    let raw: Vec<&str> = out_names.iter().map(String::as_str).collect();
    let idents = names::unique_idents(&raw).at("outputs")?;
    desc.outputs = graph
        .heads
        .iter()
        .zip(out_names.iter().zip(idents))
        .map(|(h, (name, ident))| {
            let eid = graph.eid(*h);
            TensorInfo {
                name: name.clone(),
                ident,
                dtype: graph.dltype[eid],
                shape: graph.shape[eid].clone(),
                shape_source: "graph config".into(),
            }
        })
        .collect();

    // Every called function must be a packed function defined by the code.
    let mut functions = Vec::new();
    for (nid, node) in graph.nodes.iter().enumerate() {
        if let NodeOp::Call { func_name, flatten_data } = &node.op {
            if *flatten_data {
                return Err(
                    Error::unsupported(format!("node {nid} ({func_name}) uses flatten_data=1")).in_member(gname)
                );
            }
            match desc.code.definition(func_name) {
                Some((src, f)) if !f.is_packed() => {
                    return Err(Error::invalid(format!(
                        "{func_name} (called by graph node {nid}) is not a packed function in {}",
                        src.member
                    )));
                }
                Some(_) => {}
                None if !desc.code.objects.is_empty() => {} // checked against the object's symbols at build time
                None => {
                    return Err(Error::missing(format!(
                        "function {func_name} (called by graph node {nid}): no C source defines it"
                    ))
                    .in_member(gname));
                }
            }
            if !functions.contains(func_name) {
                functions.push(func_name.clone());
            }
        }
    }
    desc.executor = Executor::Graph(GraphExec { graph, bindings, functions });
    Ok(())
}

/// Output names: relay `output_tensor_names`, else metadata (single output), else `output` /
/// `output<i>` (TVM's convention).
fn output_names(n: usize, relay: Option<&RelayMain>, module: &ModuleMeta) -> Vec<String> {
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n {
            return names.clone();
        }
    }
    if n == 1 {
        if let Some(main) = module.memory.cpu_main() {
            if main.outputs.len() == 1 {
                return vec![main.outputs[0].name.clone()];
            }
        }
    }
    default_output_names(n)
}

fn read_aot(
    archive: &Archive,
    module: &ModuleMeta,
    params: Option<Vec<ParamTensor>>,
    relay: Option<&RelayMain>,
    desc: &mut ModelDesc,
) -> Result<()> {
    let m = module.name.as_str();
    let cm = names::sanitize(m).to_ascii_lowercase();
    let header_name = format!("codegen/host/include/tvmgen_{cm}.h");
    let header = match archive.get(&header_name) {
        Some(b) => Some(InterfaceHeader::parse(b.as_str().in_member(&header_name)?, &cm).in_member(&header_name)?),
        None => None,
    };
    let _ = params; // AOT builds compile every constant into the C; `.params` is redundant.
    let main_meta = module.memory.cpu_main().cloned().unwrap_or_default();

    // --- Entry point -----------------------------------------------------------------------
    let run_sym = format!("tvmgen_{cm}_run");
    let main_syms =
        [format!("tvmgen_{cm}___tvm_main__"), format!("tvmgen_{cm}_run_model"), "tvm__run_func".to_string()];
    let run = desc.code.definition(&run_sym).map(|(s, f)| (s.member.clone(), f.clone()));
    let main = main_syms.iter().find_map(|s| desc.code.definition(s).map(|(src, f)| (src.member.clone(), f.clone())));
    let (call, style, entry_fn): (AotCall, String, CFunction) = match (&run, &main) {
        (Some((member, f)), _) if f.is_packed() => {
            (AotCall::Packed { symbol: f.name.clone() }, format!("packed {} (in {member})", f.name), f.clone())
        }
        (Some((member, f)), _) if f.params.iter().any(|p| p.ty.contains("struct")) => {
            let pools = f.params.iter().any(|p| p.ty.contains("workspace_pools"));
            if f.params.iter().any(|p| p.ty.contains("_devices")) {
                return Err(Error::unsupported(format!(
                    "{} takes a `devices` struct (C device API, e.g. Ethos-U): device contexts are not supported",
                    f.name
                ))
                .in_member(member.clone()));
            }
            if header.as_ref().is_some_and(|h| h.maps_io) {
                return Err(Error::unsupported(
                    "inputs and outputs live inside the workspace pool (tir.usmp.use_workspace_io); rebuild without it",
                )
                .in_member(header_name.clone()));
            }
            (
                AotCall::CInterface { symbol: f.name.clone(), pools },
                format!(
                    "C interface {}(inputs*, outputs*{}) (in {member})",
                    f.name,
                    if pools { ", pools*" } else { "" }
                ),
                f.clone(),
            )
        }
        (_, Some((member, f))) => {
            if f.is_packed() {
                (AotCall::Packed { symbol: f.name.clone() }, format!("packed {} (in {member})", f.name), f.clone())
            } else {
                let note = if header.is_some() && run.is_none() {
                    "; the header declares tvmgen_*_run but no C defines it, so the main function is called directly"
                } else {
                    ""
                };
                (
                    AotCall::Unpacked { symbol: f.name.clone() },
                    format!("unpacked {} (in {member}){note}", f.name),
                    f.clone(),
                )
            }
        }
        (Some((member, f)), None) => {
            (AotCall::Unpacked { symbol: f.name.clone() }, format!("unpacked {} (in {member})", f.name), f.clone())
        }
        (None, None) => {
            if !desc.code.objects.is_empty() {
                return Err(Error::unsupported(format!(
                    "the AOT entry is not in the C sources; entry points inside object files ({}) are not supported yet",
                    desc.code.objects.iter().map(|o| o.member.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
            return Err(Error::missing(format!(
                "AOT entry point: no C file defines {run_sym}, {}",
                main_syms.join(", ")
            )));
        }
    };
    desc.fact("AOT entry", style.clone(), "C source definitions");

    // --- USMP pools inside the C --------------------------------------------------------------
    let usmp = usmp_pools(desc);
    if let Some(u) = &usmp {
        desc.fact(
            "workspace",
            format!(
                "USMP pools inside the C: global_workspace {} bytes{}",
                u.workspace_bytes,
                u.constant_bytes.map(|c| format!(", global_const_workspace {c} bytes")).unwrap_or_default()
            ),
            "C source",
        );
    }

    // --- Inputs and outputs ---------------------------------------------------------------
    // The number of tensors the entry takes: the unpacked function's parameters (for a packed
    // `run` wrapper, those of the unpacked main it forwards to), minus USMP pool parameters.
    let unpacked = match &call {
        AotCall::Unpacked { .. } => Some(entry_fn.clone()),
        _ => main.as_ref().map(|(_, f)| f.clone()).filter(|f| !f.is_packed()),
    };
    let entry_arity = unpacked.as_ref().map(|f| f.params.iter().filter(|p| !is_pool_param(&p.name)).count());
    let typed_entry = unpacked.unwrap_or_else(|| entry_fn.clone());
    resolve_aot_io(desc, module, header.as_ref(), relay, &main_meta, entry_arity, &typed_entry)?;

    // --- Workspace for non-USMP builds ---------------------------------------------------
    let (workspace_bytes, workspace_source) = if usmp.is_some() {
        (0, "none: USMP pools are inside the C".to_string())
    } else if let Some(ws) = header.as_ref().and_then(|h| h.workspace_size) {
        (
            ws.max(main_meta.workspace_size_bytes),
            format!("{header_name} TVMGEN_{}_WORKSPACE_SIZE", cm.to_ascii_uppercase()),
        )
    } else {
        (main_meta.workspace_size_bytes, "metadata.json workspace_size_bytes".to_string())
    };
    // Live allocations at once: the main's own allocations plus the deepest kernel.
    let main_allocs = main.as_ref().map(|(_, f)| f.workspace_allocs.len() as u64).unwrap_or(0);
    let kernel_allocs = desc
        .code
        .sources
        .iter()
        .flat_map(|s| s.scan.functions.iter())
        .filter(|f| f.defined && !main_syms.contains(&f.name))
        .map(|f| f.workspace_allocs.len() as u64)
        .max()
        .unwrap_or(0);
    let external_pools = header
        .as_ref()
        .map(|h| {
            h.workspace_pools
                .iter()
                .map(|p| {
                    let key =
                        format!("TVMGEN_{}_{}_WORKSPACE_POOL_SIZE", cm.to_ascii_uppercase(), p.to_ascii_uppercase());
                    let size = h.defines.iter().find(|(n, _)| *n == key).map(|(_, v)| *v);
                    size.map(|s| (p.clone(), s)).ok_or_else(|| {
                        Error::missing(format!("#define {key} for workspace pool {p}")).in_member(header_name.clone())
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default();
    desc.executor = Executor::Aot(AotExec {
        call,
        style,
        usmp,
        external_pools,
        header,
        workspace_bytes,
        workspace_source,
        max_live_allocations: main_allocs + kernel_allocs,
        main_pools: Vec::new(),
    });
    Ok(())
}

/// USMP pool parameters of an AOT main (`global_workspace_1_var`, `global_const_workspace_0_var`).
fn is_pool_param(name: &str) -> bool {
    name.ends_with("_var") && (name.contains("workspace") || name.contains("pool"))
}

fn usmp_pools(desc: &ModelDesc) -> Option<UsmpPools> {
    let mut ws = None;
    let mut cs = None;
    for s in &desc.code.sources {
        for g in &s.scan.globals {
            if g.name == "global_workspace" && !g.is_extern {
                ws = g.array_len.or(Some(0));
            }
            if g.name == "global_const_workspace" && !g.is_extern {
                cs = Some(desc.memory.constants_bytes);
            }
        }
    }
    ws.map(|workspace_bytes| UsmpPools { workspace_bytes, constant_bytes: cs })
}

/// Works out AOT inputs and outputs: order from the interface header (or the entry's arity and
/// relay order), types from relay text, metadata or the C.
fn resolve_aot_io(
    desc: &mut ModelDesc,
    module: &ModuleMeta,
    header: Option<&InterfaceHeader>,
    relay: Option<&RelayMain>,
    main_meta: &crate::format::metadata::MainMemory,
    entry_arity: Option<usize>,
    entry_fn: &CFunction,
) -> Result<()> {
    let relay_params: Vec<(String, Option<TensorType>)> = relay.map(|r| r.params.clone()).unwrap_or_default();
    let find_relay = |c_name: &str| relay_params.iter().find(|(raw, _)| names::sanitize(raw) == c_name);

    // Number of outputs.
    let n_out = header
        .map(|h| h.outputs.len())
        .filter(|&n| n > 0)
        .or_else(|| relay.and_then(|r| r.returns.as_ref()).map(Vec::len))
        .or_else(|| (!main_meta.outputs.is_empty()).then_some(main_meta.outputs.len()))
        .unwrap_or(1);

    // Inputs: (raw name, type, source).
    let mut inputs: Vec<(String, Option<TensorType>, String)> = Vec::new();
    if let Some(h) = header {
        for c in &h.inputs {
            match find_relay(c) {
                Some((raw, ty)) => {
                    inputs.push((raw.clone(), ty.clone(), "relay text (order from interface header)".into()))
                }
                None => inputs.push((c.clone(), None, "interface header".into())),
            }
        }
    } else if !main_meta.inputs.is_empty() {
        // Metadata keys are alphabetical; order them as relay lists them.
        let mut named: Vec<&crate::format::metadata::IoMeta> = main_meta.inputs.iter().collect();
        named.sort_by_key(|io| relay_params.iter().position(|(r, _)| *r == io.name).unwrap_or(usize::MAX));
        for io in named {
            let ty = relay_params.iter().find(|(r, _)| *r == io.name).and_then(|(_, t)| t.clone());
            inputs.push((io.name.clone(), ty, "metadata.json inputs (order from relay text)".into()));
        }
    } else if let Some(arity) = entry_arity {
        let n_in = arity.checked_sub(n_out).filter(|&n| n > 0).ok_or_else(|| {
            Error::invalid(format!(
                "the entry {} takes {arity} pointers, fewer than {n_out} outputs + 1 input",
                entry_fn.name
            ))
        })?;
        if relay_params.len() < n_in {
            return Err(Error::missing(format!(
                "input names and shapes: the entry takes {n_in} inputs but the relay text lists {} parameters",
                relay_params.len()
            )));
        }
        for (raw, ty) in relay_params.iter().take(n_in) {
            inputs.push((
                raw.clone(),
                ty.clone(),
                "relay text (first parameters of @main; TVM front ends list inputs first)".into(),
            ));
        }
        desc.fact("inputs", format!("first {n_in} parameters of @main"), "entry arity and relay order (heuristic)");
    } else {
        return Err(Error::missing(
            "input names: no interface header, no metadata inputs and no unpacked entry to count",
        ));
    }

    let mut resolved_inputs = Vec::new();
    for (raw, ty, source) in inputs {
        let c = names::sanitize(&raw);
        let ty = match ty {
            Some(t) => t,
            None => {
                let io = main_meta.inputs.iter().find(|io| names::sanitize(&io.name) == c).ok_or_else(|| {
                    Error::missing(format!("shape of input {raw}: neither relay text nor metadata records it"))
                })?;
                let dtype = DType::parse(&io.dtype)?;
                TensorType { shape: vec![1, io.size / dtype.elem_bytes().max(1)], dtype }
            }
        };
        resolved_inputs.push((raw, ty, source));
    }

    // Outputs.
    let mut out_names: Vec<String> = match header {
        Some(h) if !h.outputs.is_empty() => h.outputs.clone(),
        _ => output_names(n_out, relay, module),
    };
    if let Some(names) = relay.and_then(|r| r.output_names.as_ref()) {
        if names.len() == n_out {
            out_names = names.clone();
        }
    }
    let returns = relay.and_then(|r| r.returns.clone());
    let c_meta_shapes = c_metadata_output_shapes(desc);
    let mut resolved_outputs = Vec::new();
    for (i, name) in out_names.iter().enumerate() {
        if let Some(t) = returns.as_ref().and_then(|r| r.get(i)) {
            resolved_outputs.push((name.clone(), t.clone(), "relay text return type".to_string()));
            continue;
        }
        // dtype and element count from metadata (by name, or the only output).
        let io = main_meta
            .outputs
            .iter()
            .find(|io| names::sanitize(&io.name) == names::sanitize(name))
            .or_else(|| (main_meta.outputs.len() == 1 && n_out == 1).then(|| &main_meta.outputs[0]));
        let dtype = match io {
            Some(io) => Some(DType::parse(&io.dtype)?),
            None => output_dtype_from_c(desc, entry_fn, resolved_inputs.len() + i).or_else(|| {
                let d = relay.and_then(|r| r.final_dtype).filter(|_| n_out == 1)?;
                desc.fact(
                    format!("output {name} dtype"),
                    d.to_string(),
                    "out_dtype of the relay text's final expression",
                );
                Some(d)
            }),
        };
        let Some(dtype) = dtype else {
            return Err(Error::missing(format!("dtype of output {i} ({name}): not in relay text, metadata or the C")));
        };
        if let Some(shape) = c_meta_shapes.get(i) {
            resolved_outputs.push((
                name.clone(),
                TensorType { shape: shape.clone(), dtype },
                "C metadata module".into(),
            ));
            continue;
        }
        let bytes = match io {
            Some(io) => io.size,
            None if n_out == 1 => {
                let in_bytes: u64 = resolved_inputs
                    .iter()
                    .map(|(_, t, _)| crate::dtype::tensor_bytes(t.dtype, &t.shape).unwrap_or(0))
                    .sum();
                main_meta.io_size_bytes.checked_sub(in_bytes).filter(|&b| b > 0).ok_or_else(|| {
                    Error::missing(format!(
                        "shape of output {name}: not recorded anywhere (io_size_bytes does not leave room for it)"
                    ))
                })?
            }
            None => return Err(Error::missing(format!("shape of output {i} ({name}): not recorded anywhere"))),
        };
        let n = bytes / dtype.elem_bytes().max(1);
        resolved_outputs.push((
            name.clone(),
            TensorType { shape: vec![1, n], dtype },
            format!("assumed [1, {n}] from its byte size"),
        ));
        desc.fact(
            format!("output {name} shape"),
            format!("[1, {n}]"),
            "byte size in metadata (shape not recorded; override if needed)",
        );
    }

    let raw_in: Vec<&str> = resolved_inputs.iter().map(|(r, ..)| r.as_str()).collect();
    let ids_in = names::unique_idents(&raw_in).at("inputs")?;
    desc.inputs = resolved_inputs
        .into_iter()
        .zip(ids_in)
        .map(|((name, t, source), ident)| TensorInfo {
            name,
            ident,
            dtype: t.dtype,
            shape: t.shape,
            shape_source: source,
        })
        .collect();
    let raw_out: Vec<&str> = resolved_outputs.iter().map(|(r, ..)| r.as_str()).collect();
    let ids_out = names::unique_idents(&raw_out).at("outputs")?;
    desc.outputs = resolved_outputs
        .into_iter()
        .zip(ids_out)
        .map(|((name, t, source), ident)| TensorInfo {
            name,
            ident,
            dtype: t.dtype,
            shape: t.shape,
            shape_source: source,
        })
        .collect();
    Ok(())
}

/// Output shapes from a C metadata module (`kTvmgenMetadata_outputs_<i>_shape`), if present.
fn c_metadata_output_shapes(desc: &ModelDesc) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for i in 0.. {
        let name = format!("kTvmgenMetadata_outputs_{i}_shape");
        let found = desc.code.sources.iter().find_map(|s| s.scan.globals.iter().find(|g| g.name == name));
        match found {
            Some(g) if !g.init_numbers.is_empty() => out.push(g.init_numbers.clone()),
            _ => break,
        }
    }
    out
}

/// The dtype of the entry's `arg`-th pointer, read from the typed parameter of the kernel that
/// receives it (for archives that record output types nowhere else).
fn output_dtype_from_c(desc: &ModelDesc, entry: &CFunction, arg: usize) -> Option<DType> {
    let pname = &entry.params.get(arg)?.name;
    for call in &entry.calls {
        if let Some(k) = call.args.iter().position(|a| a == pname) {
            if let Some((_, kernel)) = desc.code.definition(&call.callee) {
                let ty = kernel.params.get(k)?.ty.replace(' ', "");
                return match ty.as_str() {
                    "float*" => Some(DType::F32),
                    "double*" => Some(DType::parse("float64").ok()?),
                    "int8_t*" => Some(DType::I8),
                    "uint8_t*" => Some(DType::U8),
                    "int16_t*" => DType::parse("int16").ok(),
                    "int32_t*" => Some(DType::I32),
                    _ => None,
                };
            }
        }
    }
    None
}
