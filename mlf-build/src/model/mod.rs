//! The one model description that every later stage (plan, codegen, build, inspect) reads.
//! It knows nothing of files and formats: readers build it from what they parse, and it holds
//! the bytes it needs. Its types are its own (the graph, the summary of the C, the kmodel's
//! layers), so nothing here depends on a reader.

mod aot;
mod code;
mod graph;
mod kmodel;
mod kpu;
mod placement;
mod relax;

use std::path::PathBuf;

use serde::Serialize;

pub use aot::{AotCall, AotExec, MainPool, UsmpPools};
pub use code::{
    CCall, CConstant, CFile, CFunction, CGlobal, CItem, CParam, CParamUse, CSource, Code, ConstantKind, InPlaceProof,
    Include, ObjectFile,
};
pub use graph::{ArgBinding, EntryRef, Graph, GraphExec, Node, NodeOp};
pub use kmodel::{KmodelExec, StepInfo, V5Info, V5Module};
pub use kpu::Kpu;
pub use placement::Placement;
pub use relax::{
    RelaxArg, RelaxCall, RelaxExec, RelaxInput, RelaxProgram, RelaxStorage, RelaxTensor, RelaxWeight, TensorId,
    TensorPlace,
};

use crate::support::bytes::Bytes;
use crate::support::dtype::{self, DType};

/// A model, read from an MLF archive, a Relax export or a kmodel.
#[derive(Clone, Debug)]
pub struct ModelDesc {
    /// The file or directory it was read from.
    pub path: PathBuf,
    /// The container format and its version.
    pub format: ModelFormat,
    /// The model's name (`model_name` in metadata; `default` unless the user chose one).
    pub name: String,
    /// How it runs.
    pub executor: Executor,
    /// Inputs, in the order the model takes them.
    pub inputs: Vec<TensorInfo>,
    /// Outputs, in order.
    pub outputs: Vec<TensorInfo>,
    /// Parameters (weights) the runtime must supply; empty when all constants are in the code.
    pub params: Vec<ParamInfo>,
    /// Memory figures as recorded by the compiler.
    pub memory: MemoryInfo,
    /// Generated code that must be compiled and linked.
    pub code: Code,
    /// Target strings recorded by the compiler, as written.
    pub targets: Vec<String>,
    /// Facts that had to be inferred, with where they came from (shown by `inspect`).
    pub facts: Vec<Fact>,
    /// Non-fatal findings.
    pub warnings: Vec<String>,
    /// Reasons the model can be inspected but not built or run (device modules in a blob, an
    /// unsupported layer, …). Code generation refuses a model that has any.
    pub blockers: Vec<String>,
    /// A stable 64-bit hash of the model's content (used to name generated symbols and files).
    pub content_hash: u64,
}

/// Container format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "format", rename_all = "lowercase")]
pub enum ModelFormat {
    /// TVM Model Library Format.
    Mlf {
        /// `metadata.json` version (1–7).
        version: u32,
    },
    /// A TVM 0.25–0.27 `export_library` output holding a Relax VM executable.
    Relax,
    /// Kendryte kmodel.
    Kmodel {
        /// kmodel version (3, 4; 5 is read but not run).
        version: u32,
    },
}

/// How the model runs.
#[derive(Clone, Debug)]
pub enum Executor {
    /// TVM graph executor: mlf generates the call sequence from the graph.
    Graph(GraphExec),
    /// TVM AOT executor: the call sequence is in the C.
    Aot(AotExec),
    /// Kendryte kmodel, run by mlf-runtime's interpreter.
    Kmodel(KmodelExec),
    /// TVM Relax VM executable (TVM 0.25–0.27): mlf generates the call sequence from its
    /// lowered program.
    Relax(RelaxExec),
}

/// Where a fact came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// What (`input shapes`, `AOT entry`, …).
    pub what: String,
    /// The value.
    pub value: String,
    /// Where it came from (`graph config`, `relay text`, `interface header`, `C source`, …).
    pub source: String,
}

/// An input or output tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TensorInfo {
    /// Raw name as the compiler recorded it.
    pub name: String,
    /// Rust field identifier derived from the raw name.
    pub ident: String,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<u64>,
    /// Where the shape came from.
    pub shape_source: String,
    /// Where the dtype came from.
    pub dtype_source: String,
}

impl TensorInfo {
    /// Number of elements (`u64::MAX` when the shape's product overflows; readers refuse such
    /// shapes, see [`TensorInfo::numel_checked`]).
    pub fn numel(&self) -> u64 {
        dtype::numel(&self.shape).unwrap_or(u64::MAX)
    }

    /// Size in bytes (`u64::MAX` when it overflows; readers refuse such tensors, see
    /// [`TensorInfo::bytes_checked`]).
    pub fn bytes(&self) -> u64 {
        self.bytes_checked().unwrap_or(u64::MAX)
    }

    /// Number of elements, or an error naming the tensor when the shape's product overflows.
    pub fn numel_checked(&self) -> crate::error::Result<u64> {
        dtype::numel(&self.shape).ok_or_else(|| {
            crate::error::Error::invalid(format!(
                "tensor {}: shape {:?} has more elements than a 64-bit count holds",
                crate::error::shown(&self.name),
                self.shape
            ))
        })
    }

    /// Size in bytes, or an error naming the tensor when it overflows.
    pub fn bytes_checked(&self) -> crate::error::Result<u64> {
        dtype::tensor_bytes(self.dtype, &self.shape).map_err(|e| {
            crate::error::Error::invalid(format!("tensor {}: {}", crate::error::shown(&self.name), e.kind))
        })
    }
}

/// A parameter tensor.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    /// Name (graph arg-node name, `p0`, …).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<u64>,
    /// Its bytes, from the `.params` file (zero-copy slice of the archive).
    pub data: Bytes,
    /// Whether the C already holds it.
    pub linked: Option<String>,
}

impl ParamInfo {
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }
}

/// Memory figures recorded by the compiler.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryInfo {
    /// `workspace_size_bytes` of the main function (CPU).
    pub workspace_bytes: u64,
    /// `constants_size_bytes` (not reliable as a flash figure).
    pub constants_bytes: u64,
    /// `io_size_bytes` (a cross-check only).
    pub io_bytes: u64,
    /// Workspace per operator function (CPU), as recorded.
    pub operator_workspace: Vec<(String, u64)>,
}

impl ModelDesc {
    /// The module name used when `include_model!` is not given one: the model name, or the file
    /// stem of `path` when the model is called `default` (TVM's default).
    pub fn default_module_name(&self, path: &std::path::Path) -> String {
        let base = if self.name.is_empty() || self.name == "default" {
            path.file_stem().and_then(|s| s.to_str()).unwrap_or("model").to_string()
        } else {
            self.name.clone()
        };
        crate::support::names::module_ident(&base)
    }

    /// Records an inferred fact.
    pub fn fact(&mut self, what: impl Into<String>, value: impl Into<String>, source: impl Into<String>) {
        self.facts.push(Fact { what: what.into(), value: value.into(), source: source.into() });
    }

    /// Forgets the C scanner's in-place proofs ([`CFunction::in_place`]), so that the memory
    /// plan gives no operator's output the bytes of one of its inputs: the arena is then at the
    /// liveness bound at tensor granularity (the switch `Model::in_place(false)` of build.rs).
    pub fn without_in_place(&mut self) {
        for s in &mut self.code.sources {
            s.scan.functions.iter_mut().for_each(|f| f.in_place.clear());
        }
    }

    /// Alignment the builder plans buffers and workspace allocations with: 16, or 64 when the
    /// model carries LLVM objects (whose kernels assume 64-byte-aligned data).
    pub fn plan_align(&self) -> u64 {
        if self.code.objects.is_empty() { 16 } else { 64 }
    }

    /// Total bytes of the parameters the runtime supplies (those not already in the C).
    pub fn param_bytes(&self) -> u64 {
        self.params.iter().filter(|p| p.linked.is_none()).map(ParamInfo::bytes).sum()
    }
}
