//! An AOT MLF module: which entry point to call and how, its pools and its workspace.

use super::aot_io::{Sources, resolve_aot_io};
use crate::error::{Context, Error, Result};
use crate::model::*;
use crate::read::archive::Archive;
use crate::read::header::InterfaceHeader;
use crate::read::metadata::{MainMemory, ModuleMeta};
use crate::read::params::ParamTensor;
use crate::read::relay::RelayMain;
use crate::support::names;

pub(super) fn read_aot(
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
    let mut blockers = Vec::new();
    let (call, style, entry_fn) = entry_point(
        desc,
        (run.as_ref(), main.as_ref()),
        (header.as_ref(), &header_name),
        (&run_sym, &main_syms),
        &mut blockers,
    )?;
    desc.blockers.extend(blockers);
    if let (AotCall::CInterface { .. }, Some((member, f))) = (&call, &run) {
        super::aot_entry::check(desc, (member, f), header.as_ref(), &header_name, &cm)?;
    }
    desc.fact("AOT entry", style.clone(), "C source definitions");

    // --- USMP pools inside the C --------------------------------------------------------------
    let usmp = recorded_usmp_pools(desc);
    if let Some(u) = &usmp {
        let in_header = header.as_ref().and_then(|h| h.workspace_size).map(|w| (w, header_name.as_str()));
        let in_metadata = module.memory.cpu_main().map(|m| m.workspace_size_bytes);
        super::usmp_reach::check(desc, u, in_header, in_metadata)?;
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
    let sources = Sources {
        module,
        header: header.as_ref(),
        header_name: &header_name,
        relay,
        main_meta: &main_meta,
        entry_arity,
        entry_fn: &typed_entry,
    };
    resolve_aot_io(desc, &sources)?;
    if let Some(h) = &header {
        super::crosscheck::aot_against_header(&desc.inputs, &desc.outputs, h, &header_name, &cm)?;
    }

    let (workspace_bytes, workspace_source) =
        workspace(usmp.is_some(), header.as_ref().and_then(|h| h.workspace_size), &header_name, &cm, &main_meta);
    // Live allocations at once: the main's own allocations plus the deepest kernel.
    let main_allocs = main.as_ref().map(|(_, f)| f.workspace_allocs.len() as u64).unwrap_or(0);
    let kernel_allocs = deepest_kernel_allocations(desc, &main_syms);
    let external_pools = external_pools(header.as_ref(), &header_name, &cm)?;
    desc.executor = Executor::Aot(AotExec {
        call,
        style,
        usmp,
        external_pools,
        header: header.map(|_| header_name.clone()),
        workspace_bytes,
        workspace_source,
        max_live_allocations: main_allocs + kernel_allocs,
        main_pools: Vec::new(),
    });
    Ok(())
}

/// The workspace of a non-USMP build, and where its size came from: the larger of the
/// interface header's and metadata's figures.
fn workspace(usmp: bool, in_header: Option<u64>, header_name: &str, cm: &str, main_meta: &MainMemory) -> (u64, String) {
    if usmp {
        (0, "none: USMP pools are inside the C".to_string())
    } else if let Some(ws) = in_header {
        (
            ws.max(main_meta.workspace_size_bytes),
            format!("{header_name} TVMGEN_{}_WORKSPACE_SIZE", cm.to_ascii_uppercase()),
        )
    } else {
        (main_meta.workspace_size_bytes, "metadata.json workspace_size_bytes".to_string())
    }
}

/// The most workspace allocations one kernel (a defined function other than the mains) makes.
fn deepest_kernel_allocations(desc: &ModelDesc, main_syms: &[String]) -> u64 {
    desc.code
        .sources
        .iter()
        .flat_map(|s| s.scan.functions.iter())
        .filter(|f| f.defined && !main_syms.contains(&f.name))
        .map(|f| f.workspace_allocs.len() as u64)
        .max()
        .unwrap_or(0)
}

/// The USMP pools inside the C ([`usmp_pools`]), recorded as a fact.
fn recorded_usmp_pools(desc: &mut ModelDesc) -> Option<UsmpPools> {
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
    usmp
}

use super::usmp_reach::is_pool_param;

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

/// A C function and the archive member that defines it.
type Defined = (String, CFunction);

/// How to call the model: the `run` wrapper when it takes structs or is packed, else the main
/// function (packed or unpacked), with a description of the style and the C function called.
/// What cannot be supported is added to `blockers` (the model is then still read, for `inspect`).
fn entry_point(
    desc: &ModelDesc,
    (run, main): (Option<&Defined>, Option<&Defined>),
    (header, header_name): (Option<&InterfaceHeader>, &str),
    (run_sym, main_syms): (&str, &[String]),
    blockers: &mut Vec<String>,
) -> Result<(AotCall, String, CFunction)> {
    Ok(match (run, main) {
        (Some((member, f)), _) if f.is_packed() => {
            (AotCall::Packed { symbol: f.name.clone() }, format!("packed {} (in {member})", f.name), f.clone())
        }
        (Some((member, f)), _) if f.params.iter().any(|p| p.ty.contains("struct")) => {
            let pools = f.params.iter().any(|p| p.ty.contains("workspace_pools"));
            if f.params.iter().any(|p| p.ty.contains("_devices")) {
                blockers.push(format!(
                    "{member}: {} takes a `devices` struct (the C device API of an accelerator such as Ethos-U): device contexts are not supported",
                    f.name
                ));
            }
            if header.as_ref().is_some_and(|h| h.maps_io) {
                blockers.push(format!(
                    "{header_name}: inputs and outputs live inside the workspace pool (tir.usmp.use_workspace_io); rebuild without it"
                ));
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
    })
}

/// The pools the application must provide (`struct tvmgen_<m>_workspace_pools`), sized from
/// the header's `#define`s.
fn external_pools(header: Option<&InterfaceHeader>, header_name: &str, cm: &str) -> Result<Vec<(String, u64)>> {
    Ok(header
        .as_ref()
        .map(|h| {
            h.workspace_pools
                .iter()
                .map(|p| {
                    let key =
                        format!("TVMGEN_{}_{}_WORKSPACE_POOL_SIZE", cm.to_ascii_uppercase(), p.to_ascii_uppercase());
                    let size = h.defines.iter().find(|(n, _)| *n == key).map(|(_, v)| *v);
                    size.map(|s| (p.clone(), s)).ok_or_else(|| {
                        Error::missing(format!("#define {key} for workspace pool {p}")).in_member(header_name)
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default())
}
