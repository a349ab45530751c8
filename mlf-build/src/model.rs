//! The one model description that every later stage (plan, codegen, compile, inspect) reads.
//! It knows nothing of files: readers build it, and it holds the bytes it needs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::bytes::Bytes;
use crate::dtype::{self, DType};
use crate::format::csource::CFile;
use crate::format::graph::Graph;
use crate::format::header::InterfaceHeader;
use crate::format::target::Target;

/// A model, read from an MLF archive or a kmodel.
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
    /// Target strings recorded by the compiler.
    pub targets: Vec<Target>,
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
    Kmodel(crate::kmodel::KmodelExec),
}

impl Executor {
    /// `graph`, `aot` or `kmodel`.
    pub fn kind(&self) -> &'static str {
        match self {
            Executor::Graph(_) => "graph",
            Executor::Aot(_) => "aot",
            Executor::Kmodel(_) => "kmodel",
        }
    }
}

/// A graph-executor model: the validated graph and what every argument node is bound to.
#[derive(Clone, Debug)]
pub struct GraphExec {
    /// The graph.
    pub graph: Graph,
    /// For every `null` node (by node id): an input or a parameter.
    pub bindings: BTreeMap<usize, ArgBinding>,
    /// Function names that are called, each with the C signature style check done.
    pub functions: Vec<String>,
}

/// What a graph argument node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgBinding {
    /// Model input `i`.
    Input(usize),
    /// Parameter `i` of [`ModelDesc::params`].
    Param(usize),
}

/// How an AOT model's entry point is called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "style", rename_all = "kebab-case")]
pub enum AotCall {
    /// `int32_t run(struct <m>_inputs*, struct <m>_outputs*[, struct <m>_workspace_pools*])`.
    CInterface {
        /// The symbol.
        symbol: String,
        /// Whether a `workspace_pools` struct is passed.
        pools: bool,
    },
    /// A packed function taking every input, then every output as `DLTensor` handles.
    Packed {
        /// The symbol (`tvmgen_<m>_run`, `tvmgen_<m>___tvm_main__`, …).
        symbol: String,
    },
    /// A plain C function with one pointer per input, then per output.
    Unpacked {
        /// The symbol (`tvmgen_<m>___tvm_main__` or `tvmgen_<m>_run_model`).
        symbol: String,
    },
}

impl AotCall {
    /// The C symbol that is called.
    pub fn symbol(&self) -> &str {
        match self {
            AotCall::CInterface { symbol, .. } | AotCall::Packed { symbol } | AotCall::Unpacked { symbol } => symbol,
        }
    }
}

/// An AOT model.
#[derive(Clone, Debug)]
pub struct AotExec {
    /// How to call it.
    pub call: AotCall,
    /// Human-readable name of the style (for `inspect`).
    pub style: String,
    /// Pools that the C owns (USMP `global_workspace` / `global_const_workspace`), if any.
    pub usmp: Option<UsmpPools>,
    /// Pools the application must provide (`struct tvmgen_<m>_workspace_pools`): name and bytes.
    pub external_pools: Vec<(String, u64)>,
    /// The interface header, when the archive has one.
    pub header: Option<InterfaceHeader>,
    /// Bytes `TVMBackendAllocWorkspace` must serve (0 for USMP builds), before alignment slack.
    pub workspace_bytes: u64,
    /// Where `workspace_bytes` came from.
    pub workspace_source: String,
    /// Most workspace allocations that can be live at once (AOT main + the deepest kernel), for
    /// computing alignment slack.
    pub max_live_allocations: u64,
    /// When the main function is called directly with USMP pools (external parameters: the
    /// pools were taken out of the C), the pools it takes after the outputs, in order.
    pub main_pools: Vec<MainPool>,
}

/// A USMP pool passed to the AOT main function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MainPool {
    /// The main's parameter name (`global_const_workspace_0_var`, …).
    pub name: String,
    /// Constants (read from a `ParamSource`) or workspace (in the arena).
    pub constant: bool,
    /// Bytes.
    pub bytes: u64,
}

/// USMP pools compiled into the C.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UsmpPools {
    /// `global_workspace` bytes (RAM).
    pub workspace_bytes: u64,
    /// `global_const_workspace` bytes (flash), when present.
    pub constant_bytes: Option<u64>,
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
}

impl TensorInfo {
    /// Number of elements.
    pub fn numel(&self) -> u64 {
        dtype::numel(&self.shape).unwrap_or(0)
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.numel() * self.dtype.elem_bytes()
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

/// Generated code.
#[derive(Clone, Debug, Default)]
pub struct Code {
    /// C sources (`codegen/host/src/*.c|cc|cpp`), with what the scanner found in them.
    pub sources: Vec<CSource>,
    /// Object files (`codegen/host/lib/*.o`).
    pub objects: Vec<ObjectFile>,
    /// Headers from `codegen/host/include/` (relative path, bytes).
    pub headers: Vec<(String, Bytes)>,
    /// Constant arrays compiled into the C (`fused_constant*`, `__tvm_param__*`,
    /// `global_const_workspace`).
    pub constants: Vec<CConstant>,
}

/// A constant array compiled into the C.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CConstant {
    /// The C name.
    pub name: String,
    /// The file that defines it.
    pub member: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// How it is laid out: a per-kernel `static const` array, or a USMP constant pool.
    pub kind: ConstantKind,
}

/// How a C constant is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConstantKind {
    /// `static const T name[N]` (TVM ≥ 0.9 `fused_constant*`, TVM 0.8 `__tvm_param__*`).
    StaticArray,
    /// The USMP `global_const_workspace` struct.
    Pool,
}

/// A C source file.
#[derive(Clone, Debug)]
pub struct CSource {
    /// Member name in the archive.
    pub member: String,
    /// Contents.
    pub bytes: Bytes,
    /// What the scanner found.
    pub scan: CFile,
}

/// An object file.
#[derive(Clone, Debug)]
pub struct ObjectFile {
    /// Member name in the archive.
    pub member: String,
    /// Contents.
    pub bytes: Bytes,
}

impl Code {
    /// The definition of a function in any source file, with the file's member name.
    pub fn definition(&self, name: &str) -> Option<(&CSource, &crate::format::csource::CFunction)> {
        self.sources.iter().find_map(|s| s.scan.definition(name).map(|f| (s, f)))
    }

    /// Every header included by any source file.
    pub fn includes(&self) -> impl Iterator<Item = (&str, &crate::format::csource::Include)> {
        self.sources.iter().flat_map(|s| s.scan.includes.iter().map(move |i| (s.member.as_str(), i)))
    }
}

impl ModelDesc {
    /// Records an inferred fact.
    pub fn fact(&mut self, what: impl Into<String>, value: impl Into<String>, source: impl Into<String>) {
        self.facts.push(Fact { what: what.into(), value: value.into(), source: source.into() });
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

/// FNV-1a, 64-bit: a stable content hash for naming (not for integrity).
pub fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    let mut h = hash;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// FNV-1a offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
