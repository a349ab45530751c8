//! The graph executor: mlf plans every graph entry into one arena and generates the call
//! sequence from the graph.

use serde_json::json;

use super::api::{Backend, Generate, Generated, OperatorMemory, Toolchain};
use super::c_arrays::take_out_arrays;
use super::linked::unlink_params;
use super::object_sections::take_out_sections;
use super::picture::{BoxKind, Picture, PlanBox};
use super::tvm::{inspect_body, inspect_external, output_bytes, static_arrays};
use crate::codegen::graph::{GraphCodegen, module_tokens};
use crate::codegen::tvm::ParamCode;
use crate::error::{Context, Error, Result};
use crate::model::{GraphExec, ModelDesc, NodeOp};
use crate::plan::graph::{GraphPlan, Slot, plan};
use crate::plan::params::graph_region;
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;
use crate::plan::stack;
use crate::support::names;

/// A graph-executor model.
pub(super) struct GraphBackend<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) exec: &'a GraphExec,
}

impl GraphBackend<'_> {
    fn plan(&self) -> Result<GraphPlan> {
        plan(self.desc, self.exec, self.desc.plan_align()).in_file(&self.desc.path)
    }

    /// The report of the model laid out by `p`.
    fn report(&self, p: &GraphPlan, module_name: &str, target: &str, mlf_module: Option<&str>) -> MemoryReport {
        let desc = self.desc;
        let mut r = MemoryReport::new(desc, self.kind(), true, module_name, target, mlf_module);
        r.ram.arena = p.arena_bytes;
        r.ram.workspace = p.calls.iter().map(|c| c.scratch.1).max().unwrap_or(0);
        r.ram.outputs = output_bytes(desc, desc.plan_align());
        r.ram.tvm_executor = Some(p.tvm.storage_bytes + p.tvm.workspace_bytes);
        r.ram.tensor_bound = Some(p.tensor_bound);
        r.flash.params = desc.param_bytes();
        r.finish();
        r
    }

    /// The module's one-line summary.
    fn summary(&self, p: &GraphPlan, opts: &Generate<'_>, param_ram: u64) -> String {
        let head = format!("TVM graph executor model `{}` from {}", self.desc.name, opts.file_name);
        match opts.params {
            ParamCode::Resident(split) | ParamCode::Streamed(split) | ParamCode::Lazy(split) => format!(
                "{head} with external parameters ({:?}): {} bytes of arena + {param_ram} bytes for parameters; {} bytes of parameters read through a ParamSource.",
                opts.params.placement(),
                p.arena_bytes,
                split.files.iter().map(|f| f.bytes()).sum::<u64>(),
            ),
            ParamCode::Embedded(files) => {
                let embedded: u64 =
                    self.desc.params.iter().zip(files).filter(|(_, f)| f.is_some()).map(|(p, _)| p.bytes()).sum();
                format!(
                    "{head}: {} bytes of static RAM ({} layout; TVM's plan: {} bytes), {embedded} bytes of parameters in flash.",
                    p.arena_bytes,
                    p.layout,
                    p.tvm.storage_bytes + p.tvm.workspace_bytes,
                )
            }
        }
    }
}

impl Backend for GraphBackend<'_> {
    fn operator_memory(&self) -> Result<Vec<OperatorMemory>> {
        Ok(operator_memory(self.desc, &self.plan()?))
    }

    fn kind(&self) -> &'static str {
        "graph"
    }

    fn required_functions(&self) -> &[String] {
        &self.exec.functions
    }

    fn split_params(&self, toolchain: &dyn Toolchain) -> Result<(Option<ModelDesc>, Split)> {
        if let Some(why) = self.external_refusal() {
            return Err(Error::unsupported(format!("parameters cannot be external: {why}")));
        }
        // TVM 0.8 linked parameters become ordinary ones, read from the compiled C.
        let unlinked = if self.desc.params.iter().any(|p| p.linked.is_some()) {
            Some(unlink_params(self.desc, toolchain)?)
        } else {
            None
        };
        let desc = unlinked.as_ref().unwrap_or(self.desc);
        // Sections of LLVM objects first: their files are the first of the split.
        let mut split = take_out_sections(&desc.code.objects, Split::default())?;
        split.add_params(&desc.params);
        if static_arrays(desc).0 == 0 {
            return Ok((unlinked, split));
        }
        let (rewritten, split) = take_out_arrays(desc, None, split, toolchain)?;
        Ok((Some(rewritten), split))
    }

    fn generate(&self, opts: &Generate<'_>) -> Result<Generated> {
        let p = self.plan()?;
        let param_ram = match opts.params.split() {
            Some(split) => graph_region(&p, split, opts.params.placement()).1,
            None => 0,
        };
        // The run calls every kernel of the graph (and looks linked parameters up in the C).
        let mut roots: Vec<&str> = p.calls.iter().map(|c| c.func.as_str()).collect();
        if self.desc.params.iter().any(|q| q.linked.is_some()) {
            roots.push("_lookup_linked_param");
        }
        // Streamed and lazy runs read through the caller's source.
        let streamed = opts.params.placement().reads_in_run();
        let stack = opts
            .frames
            .map(|f| stack::figure(self.desc, &roots, f))
            .map(|s| if streamed { s.with_source() } else { s });
        let cg = GraphCodegen {
            symbol_prefix: opts.symbol_prefix,
            params: opts.params,
            stack: stack.as_ref(),
            shared_arena: opts.shared_arena,
            sections: opts.sections,
        };
        let tokens = module_tokens(self.desc, self.exec, &p, &cg)?;
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
        let (desc, p) = (self.desc, self.plan()?);
        let n = p.calls.len().max(1);
        // Node id → column: a buffer live from node `a` to node `b` covers the calls whose node
        // lies in [a, b].
        let first_col = |node: usize| p.calls.iter().position(|c| c.node >= node).unwrap_or(n - 1);
        let last_col = |node: usize| p.calls.iter().rposition(|c| c.node <= node).unwrap_or(0);
        let boxes = p
            .buffers
            .iter()
            .filter(|b| b.size > 0)
            .map(|b| {
                let (f, l) = (first_col(b.first), last_col(b.last));
                PlanBox {
                    name: b.name.clone(),
                    label: b.label.clone(),
                    offset: b.offset,
                    size: b.size,
                    first: f.min(l),
                    last: l.max(f),
                    kind: if b.scratch { BoxKind::Scratch } else { BoxKind::Tensor },
                }
            })
            .collect();
        let (flash, flash_caption) = if desc.params.iter().any(|p| p.linked.is_none()) {
            (
                desc.params
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| q.linked.is_none())
                    .map(|(i, q)| (param_name(&p, i, q), q.bytes()))
                    .collect(),
                "parameters in flash".to_string(),
            )
        } else {
            (
                desc.code.constants.iter().map(|c| (c.name.clone(), c.bytes)).collect(),
                "constants in the C (flash)".to_string(),
            )
        };
        Ok(Picture {
            title: format!(
                "{name}: graph executor, {} operator calls, arena {} bytes ({} layout; TVM's executor: {} bytes)",
                p.calls.len(),
                p.arena_bytes,
                p.layout,
                p.tvm.storage_bytes + p.tvm.workspace_bytes
            ),
            columns: p.calls.iter().map(|c| c.func.clone()).collect(),
            boxes,
            arena: p.arena_bytes,
            flash,
            flash_caption,
            stack: None,
        })
    }

    fn interface(&self) -> &'static str {
        "packed"
    }

    fn inspect_json(&self) -> (&'static str, serde_json::Value) {
        let g = self.exec;
        let calls = g.graph.nodes.iter().filter(|n| matches!(n.op, NodeOp::Call { .. })).count();
        let value = json!({
            "nodes": g.graph.nodes.len(),
            "entries": g.graph.num_entries(),
            "operators": g.functions.len(),
            "calls": calls,
        });
        ("graph", value)
    }

    fn inspect_head(&self, _: &mut String) {}

    fn inspect_body(&self, out: &mut String) {
        inspect_body(self.desc, out);
    }

    fn inspect_tail(&self, out: &mut String) {
        inspect_external(self.desc, self.external_refusal(), out);
    }
}

/// A parameter's name in the picture: its graph name, dtype and shape, and the operator that
/// reads it first (`p3: int8 [16, 1, 3, 3], read by conv2d_add_1`).
/// Each call's arena window (its arguments' buffers and its scratch) and parameter bytes.
fn operator_memory(desc: &ModelDesc, p: &GraphPlan) -> Vec<OperatorMemory> {
    p.calls
        .iter()
        .map(|c| {
            let mut spans: Vec<(u64, u64)> = Vec::new();
            let mut param_bytes = 0;
            for &e in &c.args {
                match p.slots.get(e) {
                    // The placed buffer live at this call that holds the argument's offset.
                    Some(Slot::Arena { offset }) => {
                        let holding = p.buffers.iter().filter(|b| {
                            !b.scratch
                                && (b.first..=b.last).contains(&c.node)
                                && b.offset <= *offset
                                && *offset < b.offset + b.size
                        });
                        if let Some(b) = holding.max_by_key(|b| b.size) {
                            spans.push((b.offset, b.size));
                        }
                    }
                    Some(Slot::Param { index } | Slot::Linked { index, .. }) => {
                        param_bytes += desc.params.get(*index).map_or(0, |q| q.bytes());
                    }
                    _ => {}
                }
            }
            if c.scratch.1 > 0 {
                spans.push(c.scratch);
            }
            spans.sort_unstable();
            spans.dedup();
            let window = spans.iter().map(|s| s.0).min().zip(spans.iter().map(|s| s.0 + s.1).max());
            OperatorMemory { name: c.func.clone(), window, arena_bytes: spans.iter().map(|s| s.1).sum(), param_bytes }
        })
        .collect()
}

fn param_name(p: &GraphPlan, index: usize, q: &crate::model::ParamInfo) -> String {
    let reader = p
        .calls
        .iter()
        .find(|c| c.args.iter().any(|&e| matches!(p.slots.get(e), Some(Slot::Param { index: i }) if *i == index)));
    let read = reader.map(|c| format!(", read by {}", names::operator(&c.func))).unwrap_or_default();
    format!("{}: {} {:?}{read}", q.name, q.dtype, q.shape)
}
