//! The AOT executor: the call sequence is in the model's C; mlf calls its entry point with the
//! caller's inputs in place and outputs, workspace and pools in one arena.

use serde_json::json;

use super::aot_main::main_function;
use super::aot_pool::take_out_constant_pool;
use super::api::{Backend, Generate, Generated, Toolchain};
use super::c_arrays::take_out_arrays;
use super::picture::{BoxKind, Picture, PlanBox};
use super::pool_picture::pool_contents;
use super::tvm::{inspect_body, inspect_external, line, object_constants, static_arrays};
use crate::codegen::aot::module_tokens;
use crate::error::{Context, Error, Result};
use crate::model::{AotCall, AotExec, ModelDesc};
use crate::plan::aot::{AotPlan, InlineWorkspace, inline_workspace, plan};
use crate::plan::params::aot_region;
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;
use crate::plan::stack;

/// An AOT model.
pub(super) struct AotBackend<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) exec: &'a AotExec,
}

impl AotBackend<'_> {
    /// Whether the C holds a USMP constant pool.
    fn has_pool(&self) -> bool {
        self.exec.usmp.as_ref().is_some_and(|u| u.constant_bytes.is_some())
    }

    fn plan(&self) -> Result<AotPlan> {
        plan(self.desc, self.exec, self.desc.plan_align()).in_file(&self.desc.path)
    }

    /// The report of the model laid out by `p`.
    fn report(&self, p: &AotPlan, module_name: &str, target: &str, mlf_module: Option<&str>) -> MemoryReport {
        let desc = self.desc;
        let mut r = MemoryReport::new(desc, self.kind(), true, module_name, target, mlf_module);
        r.ram.arena = p.arena_bytes;
        r.ram.workspace = p.workspace_bytes;
        // The outputs as the plan places them (element-aligned for C kernels): of the arena.
        r.ram.outputs = match (p.outputs.first(), desc.outputs.last(), p.outputs.last()) {
            (Some(first), Some(t), Some(last)) => last.saturating_add(t.bytes()).saturating_sub(*first),
            _ => 0,
        };
        r.ram.usmp_pool = self.exec.usmp.as_ref().map_or(0, |u| u.workspace_bytes);
        r.finish();
        r
    }

    /// The module's one-line summary.
    fn summary(&self, p: &AotPlan, opts: &Generate<'_>, param_ram: u64) -> String {
        let (desc, a) = (self.desc, self.exec);
        let head = format!("TVM AOT model `{}` from {}", desc.name, opts.file_name);
        match opts.params.split() {
            Some(_) => format!(
                "{head} with its constants external ({:?}): {} bytes of arena (workspace pool included) + {param_ram} bytes for them.",
                opts.params.placement(),
                p.arena_bytes,
            ),
            None => format!(
                "{head} ({}): {} bytes of static RAM ({} of workspace from {}){}, {} bytes of constants compiled into the C.",
                a.style,
                p.arena_bytes,
                p.workspace_bytes,
                a.workspace_source,
                a.usmp
                    .as_ref()
                    .map(|u| format!(", plus the C's own USMP pool of {} bytes", u.workspace_bytes))
                    .unwrap_or_default(),
                desc.code.constants.iter().map(|c| c.bytes).sum::<u64>()
            ),
        }
    }
}

impl Backend for AotBackend<'_> {
    fn kind(&self) -> &'static str {
        "aot"
    }

    fn required_functions(&self) -> &[String] {
        &[]
    }

    fn external_refusal(&self) -> Option<String> {
        let in_c = self.has_pool() || static_arrays(self.desc).0 > 0;
        match (in_c, object_constants(self.desc).is_some()) {
            (true, true) => Some(
                "its C holds constants (a USMP constant pool or constant arrays) and its LLVM objects hold constants too, which mlf does not take out together".into(),
            ),
            (false, false) => Some(
                "its code holds no constants to take out (no USMP constant pool, no constant arrays, no constant data in LLVM objects)".into(),
            ),
            _ => None,
        }
    }

    fn split_params(&self, toolchain: &dyn Toolchain) -> Result<(Option<ModelDesc>, Split)> {
        // A damaged object is an error naming its member and section, not an object without
        // constants (which `external_refusal` would say the code is).
        super::object_sections::take_out_sections(&self.desc.code.objects, Split::default())?;
        if let Some(why) = self.external_refusal() {
            return Err(Error::unsupported(format!("parameters cannot be external: {why}")));
        }
        if let Some(split) = object_constants(self.desc) {
            // Constants inside LLVM objects (the main among them): the sections leave whole, the
            // main reads them all.
            return Ok((None, split));
        }
        let (desc, split) = if self.has_pool() {
            take_out_constant_pool(self.desc, self.exec, toolchain)?
        } else {
            (self.desc.clone(), Split::default())
        };
        if static_arrays(&desc).0 == 0 {
            return Ok((Some(desc), split));
        }
        if self.has_pool() {
            return Err(Error::unsupported(
                "parameters cannot be external: its C holds both a USMP constant pool and constant arrays, which mlf does not take out together",
            ));
        }
        let main =
            main_function(&desc).ok_or_else(|| Error::missing("the AOT main function (which calls the operators)"))?;
        let (rewritten, split) = take_out_arrays(&desc, Some(&main), split, toolchain)?;
        Ok((Some(rewritten), split))
    }

    fn generate(&self, opts: &Generate<'_>) -> Result<Generated> {
        let p = self.plan()?;
        let symbol = self.exec.call.symbol();
        // Streamed and lazy runs read through the caller's source.
        let streamed = opts.params.placement().reads_in_run();
        let stack = opts
            .frames
            .map(|f| stack::figure(self.desc, &[symbol], f))
            .map(|s| if streamed { s.with_source() } else { s });
        let mut tokens = module_tokens(
            self.desc,
            self.exec,
            &p,
            (opts.symbol_prefix, opts.inline_workspace.as_ref()),
            opts.params,
            stack.as_ref(),
            (opts.shared_arena, opts.sections),
        )?;
        if let Some(calls) = opts.profiled_calls {
            let hook = format!("{}{}", opts.symbol_prefix, super::aot_profile::HOOK_SYMBOL);
            tokens.extend(crate::codegen::profile::hook_items(calls, &hook));
        }
        // Pools one after the other; constant arrays all (resident, lazy) or one call's (streamed).
        let param_ram = match opts.params.split() {
            Some(split) => aot_region(split, opts.params.placement(), p.align).1,
            None => 0,
        };
        Ok(Generated {
            tokens,
            arena_bytes: p.arena_bytes,
            param_ram_bytes: param_ram,
            summary: self.summary(&p, opts, param_ram),
            report: MemoryReport { stack, ..self.report(&p, opts.module_name, opts.target, opts.mlf_module) },
        })
    }

    fn memory(&self, module_name: &str, target: &str, mlf_module: Option<&str>) -> Result<MemoryReport> {
        Ok(self.report(&self.plan()?, module_name, target, mlf_module))
    }

    fn picture(&self, name: &str) -> Result<Picture> {
        let (desc, a, p) = (self.desc, self.exec, self.plan()?);
        // A USMP build's C says where each intermediate and kernel scratch lies in its pool, call
        // by call: the columns are the main's calls and the pool's contents are drawn.
        let usmp = a.usmp.as_ref().filter(|u| u.workspace_bytes > 0);
        let contents = usmp.and_then(|u| pool_contents(desc, p.arena_bytes, u.workspace_bytes));
        let columns = contents.as_ref().map_or_else(|| vec![a.call.symbol().to_string()], |(c, _)| c.clone());
        let last = columns.len().saturating_sub(1);
        let whole = |name: String, label: String, offset: u64, size: u64, kind: BoxKind| PlanBox {
            name,
            label,
            offset,
            size,
            first: 0,
            last,
            kind,
        };
        let mut boxes = Vec::new();
        if p.workspace_bytes > 0 {
            let label = format!(
                "TVMBackendAllocWorkspace window ({} bytes from {}, {} of alignment slack)",
                p.tvm_workspace_bytes, a.workspace_source, p.slack_bytes
            );
            boxes.push(whole(
                "workspace (TVMBackendAllocWorkspace)".into(),
                label,
                0,
                p.workspace_bytes,
                BoxKind::Scratch,
            ));
        }
        for (i, (t, off)) in desc.outputs.iter().zip(&p.outputs).enumerate() {
            let label =
                format!("model output {i}, tensor {} ({} {:?}), written by the model's C", t.name, t.dtype, t.shape);
            boxes.push(whole(format!("model output {i}: {}", t.name), label, *off, t.bytes(), BoxKind::Tensor));
        }
        for (pool, off, bytes) in &p.pools {
            let label = format!("workspace pool {pool}, which the application provides (struct workspace_pools)");
            boxes.push(whole(format!("pool {pool}"), label, *off, *bytes, BoxKind::Tensor));
        }
        if let Some(u) = usmp {
            let label = "USMP workspace pool global_workspace: a static array in the model's C that holds every intermediate tensor (not part of the arena)";
            boxes.push(whole(
                "global_workspace: USMP pool in the C".to_string(),
                label.into(),
                p.arena_bytes,
                u.workspace_bytes,
                BoxKind::CPool,
            ));
        }
        boxes.extend(contents.into_iter().flat_map(|(_, items)| items));
        let usmp = a
            .usmp
            .as_ref()
            .map(|u| format!(" + USMP pool inside the C: {} bytes", u.workspace_bytes))
            .unwrap_or_default();
        Ok(Picture {
            title: format!("{name}: AOT executor ({}), arena {} bytes{usmp}", a.call.symbol(), p.arena_bytes),
            columns,
            boxes,
            arena: p.arena_bytes,
            flash: desc.code.constants.iter().map(|c| (c.name.clone(), c.bytes)).collect(),
            flash_caption: "constants in the C (flash)".into(),
            stack: None,
        })
    }

    fn operator_memory(&self) -> Result<Vec<super::api::OperatorMemory>> {
        super::aot_profile::operator_memory(self.desc)
    }

    fn inline_workspace(&self) -> Option<InlineWorkspace> {
        inline_workspace(self.desc)
    }

    fn instrument_for_profile(&self, hook: &str) -> Result<Option<(ModelDesc, Vec<String>)>> {
        super::aot_profile::instrument(self.desc, hook)
    }

    fn interface(&self) -> &'static str {
        let a = self.exec;
        match &a.call {
            AotCall::CInterface { .. } => "c",
            AotCall::Packed { .. } => "packed",
            AotCall::Unpacked { .. } if a.header.is_some() => "c",
            AotCall::Unpacked { .. } => "unpacked",
        }
    }

    fn inspect_json(&self) -> (&'static str, serde_json::Value) {
        let a = self.exec;
        let value = json!({
            "call": a.call,
            "style": a.style,
            "usmp": a.usmp,
            "external_pools": a.external_pools,
            "workspace_bytes": a.workspace_bytes,
            "workspace_source": a.workspace_source,
        });
        ("aot", value)
    }

    fn inspect_head(&self, out: &mut String) {
        let a = self.exec;
        line(out, "entry", a.style.clone());
        line(out, "workspace", format!("{} bytes ({})", a.workspace_bytes, a.workspace_source));
    }

    fn inspect_body(&self, out: &mut String) {
        inspect_body(self.desc, out);
    }

    fn inspect_tail(&self, out: &mut String) {
        inspect_external(self.desc, self.external_refusal(), out);
    }
}
