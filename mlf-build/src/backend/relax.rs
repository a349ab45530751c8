//! The Relax executor (TVM 0.25–0.27 exports): mlf plans the lowered program into one arena
//! (its own liveness, not TVM's storage tokens) and generates the call sequence, each kernel
//! called through tvm-ffi's safe-call ABI from tables built when the module compiles.

use serde_json::json;

use super::api::{Backend, Generate, Generated, OperatorMemory, Toolchain};
use super::picture::{BoxKind, Picture, PlanBox};
use super::tvm::{inspect_body, inspect_external, output_bytes};
use crate::codegen::relax_module::{RelaxCodegen, module_tokens};
use crate::error::{Context, Result};
use crate::model::{ModelDesc, RelaxArg, RelaxExec, TensorPlace};
use crate::plan::relax::{RelaxPlan, kernel_scratch, plan};
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;
use crate::plan::stack;

/// A Relax export.
pub(super) struct RelaxBackend<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) exec: &'a RelaxExec,
}

/// Each call's scratch in kernels compiled to LLVM objects, read from their machine code
/// ([`object_scratch`](crate::read::relax::object_scratch)): the sum of the sizes the call's
/// kernel (`__tvm_ffi_<kernel>` and its `<kernel>_compute_`) asks for, each aligned to `align`.
/// A function that allocates and is no called kernel's is an error naming it.
#[cfg(feature = "build")]
fn object_scratch(
    objects: &[crate::model::ObjectFile],
    program: &crate::model::RelaxProgram,
    align: u64,
) -> Result<Vec<u64>> {
    use crate::read::relax::object_scratch::object_scratch;
    let mut per_call = vec![0u64; program.calls.len()];
    for o in objects {
        for (function, sizes) in object_scratch(&o.member, &o.bytes)? {
            let base = function.strip_prefix("__tvm_ffi_").unwrap_or(&function);
            let base = base.strip_suffix("_compute_").unwrap_or(base);
            let calls: Vec<usize> = (0..program.calls.len()).filter(|&k| program.calls[k].kernel == base).collect();
            if calls.is_empty() {
                return Err(crate::error::Error::unsupported(format!(
                    "function `{function}` takes scratch memory and is no kernel the program calls, so mlf \
                     cannot tell which call needs it; export the model with the C target (`{{\"kind\": \"c\"}}`)"
                ))
                .in_member(o.member.clone()));
            }
            let mut bytes = 0u64;
            for n in sizes {
                let aligned = n.checked_next_multiple_of(align.max(1)).and_then(|a| bytes.checked_add(a));
                bytes = aligned.ok_or_else(|| {
                    crate::error::Error::invalid(format!("function `{function}` asks for {n} bytes of scratch"))
                        .in_member(o.member.clone())
                })?;
            }
            for k in calls {
                per_call[k] = per_call[k].checked_add(bytes).ok_or_else(|| {
                    crate::error::Error::invalid("scratch sizes overflow").in_member(o.member.clone())
                })?;
            }
        }
    }
    Ok(per_call)
}

impl RelaxBackend<'_> {
    /// The arena plan, with each call's scratch read from the kernels' C, or from their
    /// machine code for kernels compiled to an object ([`object_scratch`]).
    fn plan(&self) -> Result<RelaxPlan> {
        let align = self.desc.plan_align();
        let c = self.desc.code.sources.first().map(|s| &s.scan);
        #[allow(unused_mut)] // without the build step there are no objects
        let mut scratch = kernel_scratch(&self.exec.program, c, align).in_file(&self.desc.path)?;
        #[cfg(feature = "build")]
        {
            let objects =
                object_scratch(&self.desc.code.objects, &self.exec.program, align).in_file(&self.desc.path)?;
            for (s, o) in scratch.iter_mut().zip(objects) {
                *s = s.checked_add(o).ok_or_else(|| crate::error::Error::invalid("scratch sizes overflow"))?;
            }
        }
        Ok(plan(&self.exec.program, align, &scratch))
    }

    fn report(&self, p: &RelaxPlan, module_name: &str, target: &str, mlf_module: Option<&str>) -> MemoryReport {
        let desc = self.desc;
        let mut r = MemoryReport::new(desc, self.kind(), true, module_name, target, mlf_module);
        r.ram.arena = p.arena;
        r.ram.workspace = p.scratch.iter().flatten().map(|s| s.1).max().unwrap_or(0);
        r.ram.outputs = output_bytes(desc, desc.plan_align());
        r.ram.tvm_executor = Some(p.tvm_storage);
        r.flash.params = desc.param_bytes();
        r.finish();
        r
    }

    fn summary(&self, p: &RelaxPlan, opts: &Generate<'_>, param_ram: u64) -> String {
        let head = format!("TVM Relax export from {}", opts.file_name);
        match opts.params.split() {
            Some(split) => format!(
                "{head} with external parameters ({:?}): {} bytes of arena + {param_ram} bytes for parameters; {} bytes of parameters read through a ParamSource.",
                opts.params.placement(),
                p.arena,
                split.files.iter().map(|f| f.bytes()).sum::<u64>(),
            ),
            None => format!(
                "{head}: {} bytes of static RAM (TVM's storage: {} bytes; liveness bound {}), {} bytes of weights in flash.",
                p.arena,
                p.tvm_storage,
                p.bound,
                self.desc.param_bytes()
            ),
        }
    }
}

impl Backend for RelaxBackend<'_> {
    fn operator_memory(&self) -> Result<Vec<OperatorMemory>> {
        Ok(operator_memory(self.desc, &self.exec.program, &self.plan()?))
    }

    fn kind(&self) -> &'static str {
        "relax"
    }

    fn required_functions(&self) -> &[String] {
        &self.exec.functions
    }

    fn split_params(&self, _: &dyn Toolchain) -> Result<(Option<ModelDesc>, Split)> {
        // The weights are in the executable, not in the kernels' code: the code is unchanged.
        let mut split = Split::default();
        split.add_params(&self.desc.params);
        Ok((None, split))
    }

    fn generate(&self, opts: &Generate<'_>) -> Result<Generated> {
        let p = self.plan()?;
        let roots: Vec<&str> = self.exec.functions.iter().map(String::as_str).collect();
        let streamed = opts.params.placement().reads_in_run();
        let stack = opts
            .frames
            .map(|f| stack::figure(self.desc, &roots, f))
            .map(|s| if streamed { s.with_source() } else { s });
        let cg = RelaxCodegen {
            symbol_prefix: opts.symbol_prefix,
            params: opts.params,
            stack: stack.as_ref(),
            shared_arena: opts.shared_arena,
            sections: opts.sections,
        };
        let (tokens, param_ram) = module_tokens(self.desc, self.exec, &p, &cg)?;
        Ok(Generated {
            tokens,
            arena_bytes: p.arena,
            param_ram_bytes: param_ram,
            summary: self.summary(&p, opts, param_ram),
            report: MemoryReport { stack, ..self.report(&p, opts.module_name, opts.target, opts.mlf_module) },
        })
    }

    fn memory(&self, module_name: &str, target: &str, mlf_module: Option<&str>) -> Result<MemoryReport> {
        Ok(self.report(&self.plan()?, module_name, target, mlf_module))
    }

    fn picture(&self, name: &str) -> Result<Picture> {
        let (prog, p) = (&self.exec.program, self.plan()?);
        let n = prog.calls.len().max(1);
        let mut boxes: Vec<PlanBox> = p
            .buffers
            .iter()
            .zip(&p.intervals)
            .zip(&p.offsets)
            .filter(|((_, i), _)| i.size > 0)
            .map(|((&t, i), &offset)| {
                let x = &prog.tensors[t];
                PlanBox {
                    name: format!("t{t}"),
                    label: format!("t{t}: {} {:?}", x.dtype, x.shape),
                    offset,
                    size: i.size,
                    first: i.first.min(n - 1),
                    last: i.last.min(n - 1),
                    kind: BoxKind::Tensor,
                }
            })
            .collect();
        for (k, s) in p.scratch.iter().enumerate() {
            if let Some((offset, size)) = *s {
                boxes.push(PlanBox {
                    name: format!("scratch{k}"),
                    label: format!("scratch of {}", prog.calls[k].kernel),
                    offset,
                    size,
                    first: k,
                    last: k,
                    kind: BoxKind::Scratch,
                });
            }
        }
        let flash =
            self.desc.params.iter().map(|q| (format!("{}: {} {:?}", q.name, q.dtype, q.shape), q.bytes())).collect();
        Ok(Picture {
            title: format!(
                "{name}: Relax program, {} kernel calls, arena {} bytes (TVM's storage: {} bytes)",
                prog.calls.len(),
                p.arena,
                p.tvm_storage
            ),
            columns: prog.calls.iter().map(|c| c.kernel.clone()).collect(),
            boxes,
            arena: p.arena,
            flash,
            flash_caption: "weights in flash".to_string(),
            stack: None,
        })
    }

    fn interface(&self) -> &'static str {
        "tvm-ffi"
    }

    fn inspect_json(&self) -> (&'static str, serde_json::Value) {
        let prog = &self.exec.program;
        let value = json!({
            "version": prog.version,
            "entry": prog.entry,
            "calls": prog.calls.len(),
            "kernels": prog.kernels(),
            "storage_bytes": prog.storage_sum(),
        });
        ("relax", value)
    }

    fn inspect_head(&self, out: &mut String) {
        let prog = &self.exec.program;
        out.push_str(&format!("entry        {} (executable version {})\n", prog.entry, prog.version));
    }

    fn inspect_body(&self, out: &mut String) {
        inspect_body(self.desc, out);
    }

    fn inspect_tail(&self, out: &mut String) {
        inspect_external(self.desc, self.external_refusal(), out);
    }
}

/// Each kernel call's arena window (the buffers its tensor arguments live in, and its scratch)
/// and the bytes of the weights it reads, for the profile's memory columns.
fn operator_memory(desc: &ModelDesc, prog: &crate::model::RelaxProgram, p: &RelaxPlan) -> Vec<OperatorMemory> {
    prog.calls
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let mut spans: Vec<(u64, u64)> = Vec::new();
            let mut param_bytes = 0;
            for a in &c.args {
                let RelaxArg::Tensor(t) = a else { continue };
                let root = prog.root(*t);
                match prog.tensors.get(root).map(|r| &r.place) {
                    Some(TensorPlace::Weight(w)) => param_bytes += desc.params.get(*w).map_or(0, |q| q.bytes()),
                    Some(TensorPlace::Storage { .. }) => {
                        if let Some(o) = p.offset_of(prog, root) {
                            spans.push((o, prog.tensors[root].bytes));
                        }
                    }
                    _ => {}
                }
            }
            if let Some(Some(s)) = p.scratch.get(k) {
                spans.push(*s);
            }
            spans.sort_unstable();
            spans.dedup();
            let window = spans.iter().map(|s| s.0).min().zip(spans.iter().map(|s| s.0 + s.1).max());
            OperatorMemory { name: c.kernel.clone(), window, arena_bytes: spans.iter().map(|s| s.1).sum(), param_bytes }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The profile's memory columns of a Relax export: every call of the MLP has a window in
    /// the arena and reads its weights; the weights read add up to the model's.
    #[test]
    fn operator_memory_of_the_mlp() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax/mlp-f32-c/model.tar");
        let desc = crate::open(&path).unwrap();
        let ops = super::super::of(&desc).operator_memory().unwrap();
        let Some(first) = ops.first() else { panic!("no operators") };
        assert!(first.window.is_some() && first.arena_bytes > 0, "{first:?}");
        assert!(first.param_bytes > 0, "{first:?}");
        assert_eq!(ops.iter().map(|o| o.param_bytes).sum::<u64>(), desc.param_bytes());
    }
}
