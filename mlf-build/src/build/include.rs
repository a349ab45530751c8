//! What `include_model!` needs from the build side for a model that has no build step (a
//! kmodel): the model read, checked, and its module generated.

use std::path::Path;

use proc_macro2::TokenStream;

use crate::backend::{self, Generate};
use crate::codegen::IncludePath;
use crate::codegen::section::Sections;
use crate::codegen::tvm::ParamCode;
use crate::error::{Context, Result};
use crate::model::Kpu;
use crate::read::kmodel;

/// The module `include_model!` emits for the kmodel at `path`, its KPU layers on the device
/// model: its default module name and its items, which embed the file from `include_path`. The
/// items still carry the markers of comments and empty lines (`codegen::render::tokens` drops
/// them, `codegen::render::text` writes them out).
///
/// The module's static memory (main memory, KPU RAM, scratch, the table of decoded steps) must
/// be at most `max_static` bytes (`include_model!`'s `max_static`, by default
/// [`DEFAULT_MAX_STATIC_BYTES`](crate::plan::limits::DEFAULT_MAX_STATIC_BYTES)).
pub fn kmodel_module(path: &Path, include_path: &IncludePath, max_static: u64) -> Result<(String, TokenStream)> {
    kmodel_module_on(path, include_path, Kpu::DeviceModel, max_static, None)
}

/// Like [`kmodel_module`], the KPU layers running on `kpu`, the model's state in the shared
/// arena `shared_arena` when one is named (`include_model!(…, arena = …)`).
pub fn kmodel_module_on(
    path: &Path,
    include_path: &IncludePath,
    kpu: Kpu,
    max_static: u64,
    shared_arena: Option<&str>,
) -> Result<(String, TokenStream)> {
    kmodel_module_in(path, include_path, kpu, max_static, (shared_arena, Sections::default()))
}

/// Like [`kmodel_module_on`], the model's state and its file in the link sections `sections`
/// names (`include_model!(…, arena_section = "…", params_section = "…")`).
pub fn kmodel_module_in(
    path: &Path,
    include_path: &IncludePath,
    kpu: Kpu,
    max_static: u64,
    (shared_arena, sections): (Option<&str>, Sections<'_>),
) -> Result<(String, TokenStream)> {
    let desc = kmodel::read(path)?;
    let name = desc.default_module_name(path);
    let planned = backend::of_on(&desc, kpu).memory(&name, "", None).in_file(path)?;
    crate::plan::limits::check_static(planned.ram.arena, "main memory, KPU RAM, scratch and steps", max_static)
        .in_file(path)?;
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let generated = backend::of_on(&desc, kpu)
        .generate(&Generate {
            symbol_prefix: "",
            params: ParamCode::Embedded(&[]),
            module_name: &name,
            file_name,
            model_file: Some(include_path),
            target: "",
            mlf_module: None,
            frames: None,
            shared_arena,
            sections,
            profiled_calls: None,
            inline_workspace: None,
        })
        .in_file(path)?;
    Ok((name, generated.tokens))
}
