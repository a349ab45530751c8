//! Kendryte kmodels: run by mlf-runtime's interpreter, so the build step has nothing to
//! compile; `include_model!` generates the module from the file itself, and the memory figures
//! come from the model description, for the backend the KPU layers run on (the device model, or
//! the K210's own KPU).

use serde_json::json;

use super::api::{Backend, Generate, Generated, Toolchain};
use super::picture::Picture;
use super::tvm::line;
use crate::codegen::kmodel::{module_tokens_on, step_table_bytes};
use crate::error::{Error, Result};
use crate::model::{KmodelExec, Kpu, ModelDesc};
use crate::plan::report::MemoryReport;
use crate::plan::split::Split;

/// The backend's name in reports.
fn kpu_name(kpu: Kpu) -> &'static str {
    match kpu {
        Kpu::DeviceModel => "device model (KPU emulated)",
        Kpu::K210 => "K210's own KPU",
    }
}

/// A kmodel.
pub(super) struct KmodelBackend<'a> {
    pub(super) desc: &'a ModelDesc,
    pub(super) exec: &'a KmodelExec,
    /// Where the KPU layers run.
    pub(super) kpu: Kpu,
}

impl KmodelBackend<'_> {
    /// The refusal of the build step.
    fn no_build_step(&self) -> Error {
        Error::unsupported("kmodels need no build step: include_model!(\"….kmodel\") reads them directly")
            .in_file(&self.desc.path)
            .with_help("remove the Model::compile() call for it from build.rs (compile_listed() skips kmodels)")
    }

    /// `inspect`'s lines on a V5 model's modules, mempools and sections.
    fn inspect_v5(&self, out: &mut String) {
        let Some(v5) = &self.exec.v5 else { return };
        line(
            out,
            "layout",
            format!(
                "{} header, alignment {}, entry module {}",
                if v5.new_layout { "nncase v1.0.0+" } else { "pre-Aug-2021" },
                v5.alignment,
                v5.entry_module
            ),
        );
        for (i, m) in v5.modules.iter().enumerate() {
            out.push_str(&format!(
                "  module {i}: {} v{}, {} bytes, {} functions\n",
                m.kind, m.version, m.size, m.functions
            ));
            for (loc, size) in &m.mempools {
                out.push_str(&format!("    mempool location {loc}: {size} bytes\n"));
            }
            for (name, flags, size) in &m.sections {
                out.push_str(&format!(
                    "    section {name:<10} {size} bytes{}\n",
                    if flags & 1 != 0 { " (merged into .rdata)" } else { "" }
                ));
            }
        }
    }
}

impl Backend for KmodelBackend<'_> {
    fn kind(&self) -> &'static str {
        "kmodel"
    }

    fn check_build_step(&self) -> Result<()> {
        Err(self.no_build_step())
    }

    fn required_functions(&self) -> &[String] {
        &[]
    }

    fn external_refusal(&self) -> Option<String> {
        Some("kmodel weights are part of the kmodel file, which is embedded".into())
    }

    fn split_params(&self, _: &dyn Toolchain) -> Result<(Option<ModelDesc>, Split)> {
        Err(self.no_build_step())
    }

    fn generate(&self, opts: &Generate<'_>) -> Result<Generated> {
        let model_file =
            opts.model_file.ok_or_else(|| Error::invalid("no path to embed the kmodel from (a bug in mlf)"))?;
        let report = self.memory(opts.module_name, opts.target, opts.mlf_module)?;
        Ok(Generated {
            tokens: module_tokens_on(
                self.desc,
                self.exec,
                (model_file, opts.file_name),
                self.kpu,
                (opts.shared_arena, opts.sections),
            )?,
            arena_bytes: report.ram.arena,
            param_ram_bytes: 0,
            summary: format!(
                "kmodel V{} `{}` from {}, KPU layers on the {}",
                self.exec.version,
                self.desc.name,
                opts.file_name,
                kpu_name(self.kpu)
            ),
            report,
        })
    }

    fn memory(&self, module_name: &str, target: &str, mlf_module: Option<&str>) -> Result<MemoryReport> {
        let k = self.exec;
        let mut r = MemoryReport::new(self.desc, self.kind(), false, module_name, target, mlf_module);
        let steps = k.steps.len() as u64;
        let table = step_table_bytes(steps);
        r.ram.arena = k.module_ram(self.kpu) + table;
        r.flash.params = k.file_bytes;
        let main = k.main_bytes.div_ceil(8) * 8;
        let parts = match self.kpu {
            Kpu::DeviceModel => {
                format!("main memory {main} + emulated KPU RAM {} + KPU scratch {}", k.kpu_bytes, k.scratch_bytes)
            }
            Kpu::K210 => format!(
                "main memory {main} + CPU layers' scratch {} (no KPU RAM: the K210's own {} bytes are used)",
                k.cpu_scratch_bytes, k.kpu_bytes
            ),
        };
        r.notes.push(format!(
            "kmodel: not planned by the build step; RAM for the KPU layers on the {}, from the model description: {parts} + a table of {steps} decoded steps ({table} bytes as laid out on this computer; smaller on 32-bit targets)",
            kpu_name(self.kpu)
        ));
        let other = match self.kpu {
            Kpu::DeviceModel => Kpu::K210,
            Kpu::K210 => Kpu::DeviceModel,
        };
        r.notes.push(format!(
            "kmodel: on the {} (kpu = \"{other}\") the module would need {} bytes",
            kpu_name(other),
            k.module_ram(other) + table
        ));
        r.notes.push("kmodel: the kmodel file is embedded in the program image (counted as parameters)".to_string());
        r.finish();
        Ok(r)
    }

    fn picture(&self, _: &str) -> Result<Picture> {
        Err(Error::unsupported("kmodel: not planned by the build step, so there is no plan to draw")
            .in_file(&self.desc.path))
    }

    fn interface(&self) -> &'static str {
        "kmodel"
    }

    fn inspect_json(&self) -> (&'static str, serde_json::Value) {
        let k = self.exec;
        let value = json!({
            "version": k.version,
            "compiler": k.compiler,
            "file_bytes": k.file_bytes,
            "model_bytes": k.model_bytes,
            "trailing_bytes": k.trailing_bytes,
            "header": k.header.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "ops": k.op_counts().into_iter().map(|(n, c)| json!({"op": n, "count": c})).collect::<Vec<_>>(),
            "layers": k.steps.iter().map(|s| json!({"type": s.kind, "name": s.name, "offset": s.offset, "size": s.size, "detail": s.detail})).collect::<Vec<_>>(),
            "memory": {
                "main_bytes": k.main_bytes,
                "kpu_bytes": k.kpu_bytes,
                "kpu_rows": k.kpu_rows,
                "scratch_bytes": k.scratch_bytes,
                "constants_bytes": k.constants_bytes,
            },
            "kpu_macs": k.macs,
            "v5": k.v5,
        });
        ("kmodel", value)
    }

    fn inspect_head(&self, _: &mut String) {}

    fn inspect_body(&self, out: &mut String) {
        let k = self.exec;
        line(out, "compiler", format!("{} (kmodel V{})", k.compiler, k.version));
        let size = format!(
            "{} bytes of model, {} bytes of file, {} trailing bytes",
            k.model_bytes, k.file_bytes, k.trailing_bytes
        );
        line(out, "size", size);
        line(out, "header", k.header.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" "));
        if k.v5.is_some() {
            return self.inspect_v5(out);
        }
        line(
            out,
            "ram",
            format!(
                "main memory {} bytes, KPU RAM {} bytes ({} rows of 64), scratch {} bytes; total static {} bytes",
                k.main_bytes,
                k.kpu_bytes,
                k.kpu_rows,
                k.scratch_bytes,
                k.main_bytes + k.kpu_bytes + k.scratch_bytes
            ),
        );
        line(out, "kpu", format!("{} multiply-accumulates per inference", k.macs));
        line(out, "ops", k.op_counts().iter().map(|(n, c)| format!("{n} x{c}")).collect::<Vec<_>>().join(", "));
        out.push_str(&format!("\n{}\n", if k.version == 3 { "layers" } else { "nodes" }));
        for (i, st) in k.steps.iter().enumerate() {
            out.push_str(&format!("  {i:<4} {:<26} @{:<8} {:>8} B  {}\n", st.name, st.offset, st.size, st.detail));
        }
    }

    fn inspect_tail(&self, _: &mut String) {}
}
