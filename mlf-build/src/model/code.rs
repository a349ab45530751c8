//! The generated code of a model: C sources with what was found in them, object files, headers
//! and the constant arrays compiled into the C.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::support::bytes::Bytes;

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

impl Code {
    /// The definition of a function in any source file, with the file's member name.
    pub fn definition(&self, name: &str) -> Option<(&CSource, &CFunction)> {
        self.sources.iter().find_map(|s| s.scan.definition(name).map(|f| (s, f)))
    }

    /// Every header included by any source file.
    pub fn includes(&self) -> impl Iterator<Item = (&str, &Include)> {
        self.sources.iter().flat_map(|s| s.scan.includes.iter().map(move |i| (s.member.as_str(), i)))
    }
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

/// An `#include`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// The path as written.
    pub path: String,
    /// `<…>` rather than `"…"`.
    pub angled: bool,
}

/// A function parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CParam {
    /// Its type as written (`float*`, `void*`, `int32_t*`, `TVMValue*`).
    pub ty: String,
    /// Its name.
    pub name: String,
}

/// A call inside a function body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CCall {
    /// The callee.
    pub callee: String,
    /// The arguments, as token text.
    pub args: Vec<String>,
}

/// A function defined or declared at file scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CFunction {
    /// Name.
    pub name: String,
    /// Return type as written (without storage class and `TVM_DLL`).
    pub ret: String,
    /// Parameters (empty for `(void)`).
    pub params: Vec<CParam>,
    /// Declared `static`.
    pub is_static: bool,
    /// True for a definition (with a body), false for a prototype.
    pub defined: bool,
    /// `TVMBackendAllocWorkspace` calls in the body, in order: the byte count when it is a
    /// constant, `None` when it is computed.
    pub workspace_allocs: Vec<Option<u64>>,
    /// Calls in the body, in order.
    pub calls: Vec<CCall>,
    /// How the body uses each parameter, in parameter order (for a prototype: only the
    /// declared types).
    pub param_uses: Vec<CParamUse>,
    /// For a packed kernel: the pairs of tensor arguments whose bytes may overlap, proven from
    /// the body (the C scanner's in-place proofs). Empty when nothing is proven.
    pub in_place: Vec<InPlaceProof>,
}

/// A proof that a kernel's stores into argument `written` never clobber an element of argument
/// `read` that is still to be read, so both may be given overlapping bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InPlaceProof {
    /// The argument only read.
    pub read: usize,
    /// The argument written.
    pub written: usize,
    /// `false`: every access to `read` comes before every access to `written`, so the two may
    /// overlap in any way. `true`: element `i` of `read` is read only in the iteration that
    /// writes element `i` of `written` (elements of one size), so the two must start at the
    /// same byte.
    pub same_index: bool,
}

/// How a function uses one pointer parameter: the names it goes by and the element types it is
/// declared, written and read as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CParamUse {
    /// The parameter's name, then the locals that alias it (`void* T_cast = arg1;`).
    pub names: Vec<String>,
    /// The element type of a typed pointer parameter (`float* p0` → `float`); `None` for `void*`.
    pub declared: Option<String>,
    /// The element type of the first store through it (`((int8_t*)T_cast)[i] = …` → `int8_t`).
    pub stored: Option<String>,
    /// The element type of the first read through it.
    pub loaded: Option<String>,
}

impl CParamUse {
    /// The element type written through the parameter: a store's cast, else its declared type.
    pub fn written(&self) -> Option<&str> {
        self.stored.as_deref().or(self.declared.as_deref())
    }

    /// The element type read through the parameter: a load's cast, else its declared type.
    pub fn read(&self) -> Option<&str> {
        self.loaded.as_deref().or(self.declared.as_deref())
    }
}

impl CFunction {
    /// True when the parameter list is TVM's packed-function signature (six parameters:
    /// `args, arg_type_ids/type_code, num_args, out_ret_value, out_ret_tcode, resource_handle`,
    /// or the five-parameter form of 2021-era forward declarations).
    pub fn is_packed(&self) -> bool {
        let n = self.params.len();
        if n != 5 && n != 6 {
            return false;
        }
        let count_ty = self.params[2].ty.replace(' ', "");
        count_ty == "int" || count_ty == "int32_t"
    }

    /// Sum of the constant workspace allocations (an upper bound of its peak), or `None` when
    /// some allocation has a computed size.
    pub fn workspace_upper_bound(&self, align: u64) -> Option<u64> {
        self.workspace_allocs.iter().try_fold(0u64, |acc, a| a.map(|n| acc + n.div_ceil(align) * align))
    }
}

/// A global variable defined or declared at file scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CGlobal {
    /// Name.
    pub name: String,
    /// Declared `static`.
    pub is_static: bool,
    /// Declared `extern` (a declaration, not a definition).
    pub is_extern: bool,
    /// Type text before the name (`const float`, `uint8_t`, `struct global_const_workspace`).
    pub ty: String,
    /// Array length when declared as `name[N]`.
    pub array_len: Option<u64>,
    /// `__attribute__((section("…")))`, if any.
    pub section: Option<String>,
    /// `__attribute__((aligned(N)))`, if any.
    pub aligned: Option<u64>,
    /// Has an initialiser.
    pub initialised: bool,
    /// The initialiser's values when it is a short list of integers (`{1L, 64L}`), else empty.
    pub init_numbers: Vec<u64>,
}

/// A top-level item (function definition or declaration, variable) and its byte range in the
/// source, including attributes written before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CItem {
    /// The declared name.
    pub name: String,
    /// True for a function definition.
    pub is_function_definition: bool,
    /// Byte range in the source text.
    pub range: std::ops::Range<usize>,
}

/// What a C file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CFile {
    /// Top-level items with their source ranges.
    pub items: Vec<CItem>,
    /// `#include`s in order.
    pub includes: Vec<Include>,
    /// Functions (definitions and prototypes) in order.
    pub functions: Vec<CFunction>,
    /// Global variables in order.
    pub globals: Vec<CGlobal>,
    /// `_lookup_linked_param` cases: storage id → `__tvm_param__…` symbol.
    pub linked_params: BTreeMap<u64, String>,
    /// The first line when it is a `// tvm target: …` comment.
    pub target_comment: Option<String>,
    /// Where (byte offset) a top-level `{` opens that the text never closes: the file is
    /// truncated (the scan stops there).
    pub unclosed: Option<usize>,
}

impl CFile {
    /// The source with the named top-level items removed (definitions and declarations).
    pub fn without_items(&self, text: &str, names: &[&str]) -> String {
        let mut ranges: Vec<std::ops::Range<usize>> =
            self.items.iter().filter(|i| names.contains(&i.name.as_str())).map(|i| i.range.clone()).collect();
        ranges.sort_by_key(|r| r.start);
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for r in ranges {
            if r.start < last || r.end > text.len() {
                continue;
            }
            out.push_str(&text[last..r.start]);
            out.push_str("/* removed by mlf */");
            last = r.end;
        }
        out.push_str(&text[last..]);
        out
    }

    /// A defined (not only declared) function by name.
    pub fn definition(&self, name: &str) -> Option<&CFunction> {
        self.functions.iter().find(|f| f.defined && f.name == name)
    }

    /// Names of externally visible definitions (non-static functions and non-static, non-extern
    /// variables): the symbols this file puts into the link.
    pub fn exported_symbols(&self) -> impl Iterator<Item = &str> {
        let f = self.functions.iter().filter(|f| f.defined && !f.is_static).map(|f| f.name.as_str());
        let g = self.globals.iter().filter(|g| !g.is_static && !g.is_extern).map(|g| g.name.as_str());
        f.chain(g)
    }
}
