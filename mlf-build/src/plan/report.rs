//! The memory report of a built model: the static RAM and the flash it needs, computed at
//! build time from the model description, its memory plan and the compiled C library.
//!
//! - **Static RAM** = the arena the generated module allocates (`ARENA_BYTES`: activations,
//!   outputs, operator scratch, TVM's AOT workspace, pools the application provides) + the RAM
//!   of external parameters (resident region or streaming buffer) + the static data of the
//!   model's C (`.data` + `.bss`, where an AOT USMP build keeps its
//!   workspace pool). The caller's input buffers are listed but not counted: inputs are used in
//!   place from wherever the caller keeps them.
//! - **Flash** = the compiled C (`.text`, read-only data — where C constants, linked parameters
//!   and USMP constant pools are — and `.data` initial values) + the parameters embedded in the
//!   program image. Sizes are summed over the library's object files before linking (an upper
//!   bound: the final link may drop unused sections); unwind tables are left out.
//! - **External parameters**: bytes loaded at run time from outside the image.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::ModelDesc;
use crate::plan::stack::StackFigure;
use crate::support::size::human;

/// The memory a model needs, in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// The module name (what `include_model!` declares), used in messages.
    pub model: String,
    /// The model file.
    pub file: PathBuf,
    /// The MLF module read from a multi-module archive, if one was chosen.
    pub mlf_module: Option<String>,
    /// `graph`, `aot` or `kmodel`.
    pub executor: String,
    /// The target triple the C was compiled for.
    pub target: String,
    /// Whether mlf planned the model's memory at build time (false for kmodels).
    pub planned: bool,
    /// Static RAM.
    pub ram: Ram,
    /// Flash (program image).
    pub flash: Flash,
    /// Bytes of parameters loaded at run time from outside the program image.
    pub external_param_bytes: u64,
    /// The stack one run needs (TVM models whose C was compiled).
    #[serde(default)]
    pub stack: Option<StackFigure>,
    /// Remarks on how figures were obtained.
    pub notes: Vec<String>,
    /// The shared arena (`mlf_runtime::shared_arena!`) the model's arena is part of, if any:
    /// its `ram.arena` is then its part of that arena, which totals count once per arena.
    #[serde(default)]
    pub shared_arena: Option<String>,
    /// The link section the model's arena is in (`arena_section`), if any: the region the
    /// linker script places it in counts `ram.arena`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arena_section: Option<String>,
    /// The link section the model's parameters are in (`params_section`), if any: the region
    /// the linker script places it in counts `flash.params` (embedded) or `ram.params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_section: Option<String>,
}

/// Static RAM of a model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ram {
    /// What counts against a RAM budget: `arena + params + c_data`.
    pub total: u64,
    /// The static arena the generated module allocates (its `ARENA_BYTES`).
    pub arena: u64,
    /// Of the arena: memory served to `TVMBackendAllocWorkspace` (graph: the largest operator's
    /// scratch window; AOT: the workspace window).
    pub workspace: u64,
    /// Of the arena: the model's outputs.
    pub outputs: u64,
    /// External parameters' static RAM, beside the arena: the resident region, or the staging
    /// buffer of streamed parameters (0 for embedded parameters, which stay in flash).
    pub params: u64,
    /// Static data of the model's C (`.data` + `.bss`).
    pub c_data: u64,
    /// Of `c_data`: the AOT USMP workspace pool compiled into the C.
    pub usmp_pool: u64,
    /// The caller's input buffers (not counted in `total`).
    pub inputs: u64,
    /// What TVM's own graph executor would allocate for the same model (graph models).
    pub tvm_executor: Option<u64>,
    /// The liveness bound at tensor granularity (graph models): the most bytes of tensors and
    /// scratch live at one step when no operator's output shares bytes with its inputs. The
    /// arena is below it when in-place operators share bytes (`docs/memory.md`).
    #[serde(default)]
    pub tensor_bound: Option<u64>,
}

/// Flash of a model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flash {
    /// What counts against a flash budget: `code + rodata + data + params`.
    pub total: u64,
    /// Machine code of the model's C (`.text`).
    pub code: u64,
    /// Read-only data of the model's C (constants, linked parameters, USMP constant pools).
    pub rodata: u64,
    /// Initial values of the C's `.data`.
    pub data: u64,
    /// Parameters embedded in the program image by the generated module, used in place.
    pub params: u64,
    /// Of `rodata`: constant arrays the model description found in the C (informational).
    pub c_constants: u64,
    /// Whether `code`, `rodata` and `data` were measured from a compiled library (false: the C
    /// was not compiled, and `rodata` is the description's constants).
    pub measured: bool,
}

/// Section sizes of a compiled static library, summed over its object files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionSizes {
    /// Executable code.
    pub text: u64,
    /// Read-only data.
    pub rodata: u64,
    /// Initialised writable data.
    pub data: u64,
    /// Zero-initialised data.
    pub bss: u64,
}

impl MemoryReport {
    /// An empty report of `desc` (executor `kind`; `planned`: whether the build plans its
    /// memory) for module `module_name` built for `target`: the caller's inputs and the C's
    /// constant arrays are filled in, the rest is left for the backend that planned the model.
    pub fn new(
        desc: &ModelDesc,
        kind: &str,
        planned: bool,
        module_name: &str,
        target: &str,
        mlf_module: Option<&str>,
    ) -> MemoryReport {
        let mut r = MemoryReport {
            model: module_name.to_string(),
            file: desc.path.clone(),
            mlf_module: mlf_module.map(str::to_string),
            executor: kind.to_string(),
            target: target.to_string(),
            planned,
            ram: Ram { inputs: desc.inputs.iter().map(|t| t.bytes()).sum(), ..Ram::default() },
            flash: Flash { c_constants: desc.code.constants.iter().map(|c| c.bytes).sum(), ..Flash::default() },
            external_param_bytes: 0,
            stack: None,
            notes: Vec::new(),
            shared_arena: None,
            arena_section: None,
            params_section: None,
        };
        r.finish();
        r
    }

    /// Adds the compiled C's section sizes (`None`: not compiled, read-only data is the
    /// description's constants) to a report from [`MemoryReport::new`].
    pub fn apply_sections(&mut self, sections: Option<SectionSizes>) {
        let (ram, flash) = (&mut self.ram, &mut self.flash);
        match sections {
            Some(s) => {
                flash.code = s.text;
                flash.rodata = s.rodata;
                flash.data = s.data;
                flash.measured = true;
                ram.c_data = s.data + s.bss;
                if ram.c_data < ram.usmp_pool {
                    self.notes.push(format!(
                        "the C's static data ({} bytes) is smaller than its USMP pool ({} bytes)",
                        ram.c_data, ram.usmp_pool
                    ));
                    ram.c_data = ram.usmp_pool;
                }
            }
            None => {
                flash.rodata = flash.c_constants;
                ram.c_data = ram.usmp_pool;
                if self.executor != "kmodel" {
                    self.notes.push("the model's C was not compiled: code size unknown, read-only data is the constants the description lists".into());
                }
            }
        }
        self.finish();
    }

    /// Recomputes the totals from the figures.
    pub fn finish(&mut self) {
        self.ram.total = self.ram.arena + self.ram.params + self.ram.c_data;
        self.flash.total = self.flash.code + self.flash.rodata + self.flash.data + self.flash.params;
    }
}

/// Totals of several reports (a crate's models together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Static RAM.
    pub ram: u64,
    /// Flash.
    pub flash: u64,
    /// External parameters.
    pub external_param_bytes: u64,
}

impl Totals {
    /// Sums `reports`, counting a shared arena once: its largest part, not every model's.
    pub fn of<'a>(reports: impl IntoIterator<Item = &'a MemoryReport>) -> Totals {
        let reports: Vec<&MemoryReport> = reports.into_iter().collect();
        let mut t = reports.iter().fold(Totals::default(), |t, r| Totals {
            ram: t.ram + r.ram.total,
            flash: t.flash + r.flash.total,
            external_param_bytes: t.external_param_bytes + r.external_param_bytes,
        });
        for arena in SharedArena::of(&reports) {
            t.ram -= arena.parts.iter().map(|(_, b)| b).sum::<u64>() - arena.bytes;
        }
        t
    }
}

/// A shared arena among a crate's models: its size (the largest part) and each model's part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedArena {
    /// Its name (the module `mlf_runtime::shared_arena!` declares).
    pub name: String,
    /// Its bytes: the largest part.
    pub bytes: u64,
    /// Each model's module and its part, in the reports' order.
    pub parts: Vec<(String, u64)>,
}

impl SharedArena {
    /// The shared arenas the models of `reports` are on, in the order they first appear.
    pub fn of(reports: &[&MemoryReport]) -> Vec<SharedArena> {
        let mut out: Vec<SharedArena> = Vec::new();
        for r in reports {
            let Some(name) = &r.shared_arena else { continue };
            let part = (r.model.clone(), r.ram.arena);
            match out.iter_mut().find(|a| &a.name == name) {
                Some(a) => {
                    a.bytes = a.bytes.max(part.1);
                    a.parts.push(part);
                }
                None => out.push(SharedArena { name: name.clone(), bytes: part.1, parts: vec![part] }),
            }
        }
        out
    }

    /// What the models would take on arenas of their own: the sum of the parts.
    pub fn apart(&self) -> u64 {
        self.parts.iter().map(|(_, b)| b).sum()
    }
}

/// One line of the human report: label, exact bytes, the size for people, a comment.
fn line(f: &mut fmt::Formatter<'_>, label: &str, bytes: u64, comment: &str) -> fmt::Result {
    let people = if bytes < 1024 { String::new() } else { format!("({})", human(bytes)) };
    writeln!(f, "  {label:<22}{bytes:>10} bytes {people:<12} {comment}")
}

impl fmt::Display for MemoryReport {
    /// The human report: one line per figure, exact byte counts first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let module = self.mlf_module.as_ref().map(|m| format!(", MLF module {m}")).unwrap_or_default();
        writeln!(f, "model {} ({file}{module}, {} executor, target {})", self.model, self.executor, self.target)?;
        if self.executor == "kmodel" {
            return self.fmt_kmodel(f);
        }
        let r = &self.ram;
        line(f, "static RAM", r.total, "arena + parameter RAM + C data")?;
        let tvm = r.tvm_executor.map(|t| format!(" (TVM's executor: {t})")).unwrap_or_default();
        match &self.shared_arena {
            Some(a) => line(f, "  arena", r.arena, &format!("its part of the shared arena `{a}`{tvm}"))?,
            None => line(f, "  arena", r.arena, &format!("ARENA_BYTES of the generated module{tvm}"))?,
        }
        if let Some(b) = r.tensor_bound {
            let how = match r.arena.cmp(&b) {
                std::cmp::Ordering::Less => format!("{} bytes below it with in-place operators", b - r.arena),
                std::cmp::Ordering::Equal => "the arena is at it".to_string(),
                std::cmp::Ordering::Greater => format!("the arena is {} bytes above it", r.arena - b),
            };
            line(f, "    tensor bound", b, &format!("liveness bound at tensor granularity; {how}"))?;
        }
        line(f, "    workspace", r.workspace, "of the arena: TVMBackendAllocWorkspace")?;
        line(f, "    outputs", r.outputs, "of the arena")?;
        line(f, "  parameter RAM", r.params, "external parameters: resident region or staging buffer")?;
        let pool = if r.usmp_pool > 0 { format!(", of it the USMP pool: {}", r.usmp_pool) } else { String::new() };
        line(f, "  C data", r.c_data, &format!(".data + .bss of the model's C{pool}"))?;
        line(f, "  inputs", r.inputs, "the caller's buffers, not counted")?;
        let fl = &self.flash;
        line(f, "flash", fl.total, "code + read-only data + data + parameters")?;
        let measured = if fl.measured { "" } else { " (not measured)" };
        line(f, "  code", fl.code, &format!(".text of the model's C{measured}"))?;
        line(f, "  read-only data", fl.rodata, &format!("of the model's C (constant arrays: {})", fl.c_constants))?;
        line(f, "  data", fl.data, "initial values of the C's .data")?;
        line(f, "  parameters", fl.params, "embedded in the program image, used in place")?;
        line(f, "external parameters", self.external_param_bytes, "loaded at run time")?;
        if let Some(s) = &self.stack {
            let bound = if s.bounded { "" } else { " (not a bound, see the notes)" };
            line(f, "stack", s.total, &format!("of one run, below its caller{bound}"))?;
            let profile = if s.debug { "with debug assertions, as in the dev profile" } else { "optimised builds" };
            line(f, "  mlf's frames", s.runtime, &format!("run() and the runtime around the calls ({profile})"))?;
            line(f, "  C frames", s.c, &format!("the deepest chain: {}", s.deepest))?;
            line(f, "  leaf outside the C", s.leaf, "allowance: TVMBackendAllocWorkspace, expf, memcpy…")?;
            if s.source > 0 {
                line(f, "  parameter source", s.source, "allowance: the source's load (streamed or lazy parameters)")?;
            }
            for why in &s.unbounded {
                writeln!(f, "  note: stack: {why}")?;
            }
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

impl MemoryReport {
    /// The rows of a kmodel's report: it has no C, no TVM workspace and no separate parameters
    /// (the notes break the arena down into main memory, emulated KPU RAM, scratch and steps).
    fn fmt_kmodel(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, fl) = (&self.ram, &self.flash);
        line(f, "static RAM", r.total, "the arena")?;
        let what = "main memory + emulated KPU RAM + scratch + decoded steps";
        match &self.shared_arena {
            Some(a) => line(f, "  arena", r.arena, &format!("its part of the shared arena `{a}`: {what}"))?,
            None => line(f, "  arena", r.arena, &format!("ARENA_BYTES: {what}"))?,
        }
        line(f, "  inputs", r.inputs, "the caller's buffers, not counted")?;
        line(f, "flash", fl.total, "the kmodel file (and mlf's interpreter, not counted)")?;
        line(f, "  kmodel file", fl.params, "embedded in the program image, read in place")?;
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_report_lines() {
        let r = MemoryReport {
            model: "digits".into(),
            file: "m/digits.tar".into(),
            mlf_module: None,
            executor: "graph".into(),
            target: "t".into(),
            planned: true,
            ram: Ram { total: 88192, arena: 88192, ..Ram::default() },
            flash: Flash { total: 5, code: 5, measured: true, ..Flash::default() },
            external_param_bytes: 0,
            stack: None,
            notes: vec![],
            shared_arena: None,
            arena_section: None,
            params_section: None,
        };
        let text = r.to_string();
        assert!(text.starts_with("model digits (digits.tar, graph executor, target t)\n"), "{text}");
        assert!(
            text.contains("\n  static RAM                 88192 bytes (86.1 KiB)   arena + parameter RAM + C data\n"),
            "{text}"
        );
        assert!(
            text.contains("\n    code                         5 bytes              .text of the model's C\n"),
            "{text}"
        );
    }

    #[test]
    fn kmodel_report_has_its_own_rows() {
        let r = MemoryReport {
            model: "iris".into(),
            file: "m/iris.kmodel".into(),
            mlf_module: None,
            executor: "kmodel".into(),
            target: "t".into(),
            planned: false,
            ram: Ram { total: 4096, arena: 4096, inputs: 16, ..Ram::default() },
            flash: Flash { total: 2000, params: 2000, ..Flash::default() },
            external_param_bytes: 0,
            stack: None,
            notes: vec![],
            shared_arena: None,
            arena_section: None,
            params_section: None,
        };
        let text = r.to_string();
        assert!(text.contains("\n    kmodel file               2000 bytes (2.0 KiB)    embedded"), "{text}");
        for tvm_only in ["workspace", "outputs", "parameter RAM", "C data", "code", "read-only data", "parameters"] {
            assert!(!text.lines().any(|l| l.trim_start().starts_with(tvm_only)), "{tvm_only} in\n{text}");
        }
        assert!(!text.contains("TVMBackendAllocWorkspace"), "{text}");
    }
}
