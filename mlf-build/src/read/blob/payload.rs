//! Module payloads, decoded where TVM documents their `SaveToBinary`/`SaveToBytes` format.
//!
//! In the legacy layout payloads carry no length, so a payload must be decoded to find where the
//! next entry starts: a type key this module does not know stops the read with an error naming
//! the key and its offset. In the tvm-ffi layout payloads are length-prefixed; unknown kinds are
//! kept as [`Payload::Opaque`].
//!
//! Formats (TVM v0.18 unless noted; `str` = dmlc string, `vec<T>` = `u64` count + items):
//!
//! | type key | payload |
//! |---|---|
//! | `GraphExecutorFactory` (`GraphRuntimeFactory` in 0.7) | `str graph_json, u64 n, vec<str> names, n × NDArray, str module_name` |
//! | `AotExecutorFactory` | `u64 n, vec<str> names, n × NDArray, str module_name` |
//! | `c` | `str code, str fmt, vec<str> func_names, vec<str> const_vars` |
//! | `const_loader` (earlier `metadata`) | `vec<str> vars, u64 n, n × NDArray, vec<str> symbols, u64 m, m × vec<str>` |
//! | `metadata_module` | nothing |
//! | `cuda`, `hip`, `opencl`, `sdaccel`, `aocl` | `str fmt, map<str, FunctionInfo> fmap, str data` |
//! | `vulkan` | `str fmt, fmap, map<str, {u32 flag, vec<u32> spirv}>` |
//! | `metal` | later releases: `str version ("0.1.0"), map<str, str> per-function sources, fmap, str fmt`; older: `str fmt, fmap, str data` |
//! | `relax.Executable`, `relax.VMExecutable` | legacy: one `str` holding the executable; tvm-ffi: the executable itself. It starts with `u64` magic `0xD225DE2F4214151D`/`…1E` and `str` version |
//! | BYOC JSON runtimes (`dnnl_json`, `tensorrt`, …) | `str symbol, str graph_json, vec<str> const_names` |
//!
//! `FunctionInfo` is `str name, vec<DLDataType> arg_types, vec<str> launch_param_tags`, followed
//! in later releases by `vec<i32> arg_extra_tags`; [`Framing`] says which variant a blob uses.

use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use crate::read::dmlc;
use crate::read::params::{MIN_NDARRAY_BYTES, ParamTensor, read_named_tensors};
use crate::support::bytes::{Bytes, Reader};
use crate::support::dtype::DType;

/// Framing variants that changed between TVM releases with nothing in the blob to mark them.
/// The legacy reader tries [`Framing::CANDIDATES`] in order and keeps the first that reads the
/// whole blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Framing {
    /// `FunctionInfo` ends with `vec<i32> arg_extra_tags` (later releases).
    pub function_info_extra_tags: bool,
    /// The `metal` payload is the versioned one (`version, per-function sources, fmap, fmt`)
    /// rather than `fmt, fmap, data`.
    pub metal_source_map: bool,
}

impl Framing {
    /// The variants, newest first.
    pub const CANDIDATES: [Framing; 4] = [
        Framing { function_info_extra_tags: true, metal_source_map: true },
        Framing { function_info_extra_tags: false, metal_source_map: true },
        Framing { function_info_extra_tags: true, metal_source_map: false },
        Framing { function_info_extra_tags: false, metal_source_map: false },
    ];
}

impl Framing {
    /// Reads with each variant in turn ([`Framing::CANDIDATES`], newest first) and returns the
    /// first result that reads, with the variant when the read depended on it. `read` sets its
    /// flag when its result depended on the variant; a failure that did not stops the search.
    /// The error is the first variant's.
    pub(super) fn first_that_reads<T>(
        mut read: impl FnMut(Framing, &mut bool) -> Result<T>,
    ) -> Result<(T, Option<Framing>)> {
        let mut first_err = None;
        for framing in Framing::CANDIDATES {
            let mut used = false;
            match read(framing, &mut used) {
                Ok(v) => return Ok((v, used.then_some(framing))),
                Err(e) => {
                    first_err.get_or_insert(e);
                    if !used {
                        break;
                    }
                }
            }
        }
        Err(first_err.expect("at least one variant is tried"))
    }
}

impl Default for Framing {
    fn default() -> Self {
        Framing::CANDIDATES[0]
    }
}

/// What kind of module a type key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModuleClass {
    /// `_lib`: the host library itself (the compiled C/LLVM code).
    HostLibrary,
    /// An executor factory (graph JSON, parameters).
    Executor,
    /// C source kept as a module (`c`).
    HostSource,
    /// Constants for external code (`const_loader`, `metadata`, `metadata_module`).
    Constants,
    /// A Relax virtual-machine executable.
    VirtualMachine,
    /// A BYOC JSON runtime (`dnnl_json`, `tensorrt`, …).
    External,
    /// Kernels for an accelerator (`cuda`, `opencl`, `vulkan`, `metal`, …).
    Device,
    /// A type key this reader does not know.
    Unknown,
}

/// Every type key the payload decoder reads, with its class: in the legacy layout, where payloads carry no
/// length, exactly the keys the reader can step over.
pub const DECODED_KEYS: &[(&str, ModuleClass)] = {
    use ModuleClass::*;
    &[
        (super::layout::LIB_KEY, HostLibrary),
        ("GraphExecutorFactory", Executor),
        ("GraphRuntimeFactory", Executor),
        ("AotExecutorFactory", Executor),
        ("c", HostSource),
        ("const_loader", Constants),
        ("metadata", Constants),
        ("metadata_module", Constants),
        ("cuda", Device),
        ("hip", Device),
        ("opencl", Device),
        ("sdaccel", Device),
        ("aocl", Device),
        ("vulkan", Device),
        ("metal", Device),
        ("relax.Executable", VirtualMachine),
        ("relax.VMExecutable", VirtualMachine),
        // The BYOC JSON runtimes whose framing is `JSONRuntimeBase`'s.
        ("dnnl_json", External),
        ("bnns_json", External),
        ("tensorrt", External),
        ("arm_compute_lib", External),
        ("cublas_json", External),
        ("cudnn_json", External),
    ]
};
/// Type keys of device modules whose payloads are not decoded.
const UNDECODED_DEVICE_KEYS: &[&str] = &["webgpu", "hexagon"];

impl ModuleClass {
    /// The class of a type key.
    pub fn of(key: &str) -> ModuleClass {
        if UNDECODED_DEVICE_KEYS.contains(&key) {
            return ModuleClass::Device;
        }
        DECODED_KEYS.iter().find(|(k, _)| *k == key).map_or(ModuleClass::Unknown, |(_, class)| *class)
    }

    /// A short name (`device`, `executor`, …).
    pub fn name(self) -> &'static str {
        match self {
            ModuleClass::HostLibrary => "host-library",
            ModuleClass::Executor => "executor",
            ModuleClass::HostSource => "host-source",
            ModuleClass::Constants => "constants",
            ModuleClass::VirtualMachine => "virtual-machine",
            ModuleClass::External => "external",
            ModuleClass::Device => "device",
            ModuleClass::Unknown => "unknown",
        }
    }
}

/// A decoded payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// `_lib`: no payload.
    Lib,
    /// `GraphExecutorFactory`/`GraphRuntimeFactory`/`AotExecutorFactory`.
    Factory(Factory),
    /// `c`: a C source module.
    CSource(CSourceModule),
    /// `const_loader`/`metadata`: constants for external code.
    ConstLoader(ConstLoader),
    /// `metadata_module`: nothing is stored.
    MetadataModule,
    /// A device module's kernels.
    Device(DeviceModule),
    /// A Relax VM executable (only its header is decoded).
    Relax(RelaxExecutable),
    /// A BYOC JSON runtime.
    Json(JsonRuntime),
    /// A kind this reader does not decode (tvm-ffi layout only, where the payload has a length).
    Opaque,
}

/// An executor factory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Factory {
    /// The graph JSON (`None` for `AotExecutorFactory`).
    pub graph_json: Option<Bytes>,
    /// The parameters, in stored order.
    pub params: Vec<ParamTensor>,
    /// The module name (`default`).
    pub module_name: String,
}

/// A `c` module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CSourceModule {
    /// The C code.
    pub code: Bytes,
    /// Its format (`c`, `cc`).
    pub fmt: String,
    /// The functions it defines.
    pub func_names: Vec<String>,
    /// Constant variables it expects.
    pub const_vars: Vec<String>,
}

/// A `const_loader` (or `metadata`) module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstLoader {
    /// The constants, named by their variables.
    pub arrays: Vec<ParamTensor>,
    /// The symbols that need constants.
    pub symbols: Vec<String>,
    /// For each symbol, the variables it needs.
    pub const_vars: Vec<Vec<String>>,
}

/// A device module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceModule {
    /// The payload's version string (versioned `metal` payloads only).
    pub version: Option<String>,
    /// The code format (`ptx`, `cubin`, `cl`, `spirv`, `metal`, …).
    pub fmt: String,
    /// The kernels' function info, in stored order.
    pub functions: Vec<FunctionInfo>,
    /// The code.
    pub code: DeviceCode,
}

/// A device module's code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceCode {
    /// One binary or source string (`cuda`, `opencl`, older `metal`, …).
    Data(Bytes),
    /// Per-function sources (`metal` in later releases): name and source.
    Sources(Vec<(String, Bytes)>),
    /// Per-function SPIR-V shaders (`vulkan`): name, flag and words.
    Spirv(Vec<SpirvShader>),
}

impl DeviceCode {
    /// Total code bytes.
    pub fn bytes(&self) -> u64 {
        match self {
            DeviceCode::Data(b) => b.len() as u64,
            DeviceCode::Sources(v) => v.iter().map(|(_, b)| b.len() as u64).sum(),
            DeviceCode::Spirv(v) => v.iter().map(|s| s.words.len() as u64 * 4).sum(),
        }
    }
}

/// One Vulkan shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpirvShader {
    /// The function name (map key).
    pub name: String,
    /// Header flag bits.
    pub flag: u32,
    /// SPIR-V words.
    pub words: Vec<u32>,
}

/// A kernel's `FunctionInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// The map key it was stored under.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Argument types.
    pub arg_types: Vec<DType>,
    /// Launch parameter tags (`blockIdx.x`, …).
    pub launch_param_tags: Vec<String>,
    /// `arg_extra_tags`, in releases that store them.
    pub arg_extra_tags: Option<Vec<i32>>,
}

/// A Relax VM executable's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxExecutable {
    /// The executable's bytes (inside the legacy layout's string).
    pub code: Bytes,
    /// Its magic number, when at least 8 bytes are present.
    pub magic: Option<u64>,
    /// Its version string (`0.14`), when readable.
    pub version: Option<String>,
}

/// The Relax VM bytecode magics TVM has used.
pub const RELAX_MAGICS: [u64; 2] = [0xD225_DE2F_4214_151D, 0xD225_DE2F_4214_151E];

/// A BYOC JSON runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonRuntime {
    /// The function symbol it implements.
    pub symbol: String,
    /// Its graph JSON.
    pub graph_json: Bytes,
    /// The constants it needs.
    pub const_names: Vec<String>,
}

/// State shared by the decoders of one blob.
pub(super) struct Ctx<'a> {
    /// The buffer every reader reads (so tensor and code ranges become slices of it).
    pub buf: &'a Bytes,
    /// The framing variant being tried.
    pub framing: Framing,
    /// Set when a decoder's result depended on `framing`.
    pub framing_used: bool,
    /// Legacy layout (affects the Relax executable's framing).
    pub legacy: bool,
}

impl Ctx<'_> {
    fn slice(&self, range: std::ops::Range<usize>) -> Result<Bytes> {
        self.buf.slice(range).ok_or_else(|| Error::invalid("range outside the blob"))
    }
}

/// Decodes the payload of `key` from `r` (a reader over `ctx.buf`). `Ok(None)` when the key is not
/// known.
pub(super) fn decode(key: &str, ctx: &mut Ctx<'_>, r: &mut Reader<'_>) -> Result<Option<Payload>> {
    let Some(&(_, class)) = DECODED_KEYS.iter().find(|(k, _)| *k == key) else { return Ok(None) };
    Ok(Some(match class {
        ModuleClass::HostLibrary => Payload::Lib,
        ModuleClass::Executor => Payload::Factory(factory(ctx, r, key != "AotExecutorFactory")?),
        ModuleClass::HostSource => Payload::CSource(CSourceModule {
            code: ctx.slice(dmlc::bytes(r).map_err(|e| e.at("code"))?)?,
            fmt: dmlc::string(r).map_err(|e| e.at("fmt"))?,
            func_names: dmlc::vec_string(r).map_err(|e| e.at("func_names"))?,
            const_vars: dmlc::vec_string(r).map_err(|e| e.at("const_vars"))?,
        }),
        ModuleClass::Constants if key == "metadata_module" => Payload::MetadataModule,
        ModuleClass::Constants => Payload::ConstLoader(const_loader(ctx, r)?),
        ModuleClass::Device => Payload::Device(device(key, ctx, r)?),
        ModuleClass::VirtualMachine => {
            let range = if ctx.legacy {
                dmlc::bytes(r).map_err(|e| e.at("executable"))?
            } else {
                r.take_range(r.remaining() as u64)?
            };
            Payload::Relax(relax(ctx.slice(range)?))
        }
        ModuleClass::External => Payload::Json(JsonRuntime {
            symbol: dmlc::string(r).map_err(|e| e.at("symbol"))?,
            graph_json: ctx.slice(dmlc::bytes(r).map_err(|e| e.at("graph_json"))?)?,
            const_names: dmlc::vec_string(r).map_err(|e| e.at("const_names"))?,
        }),
        ModuleClass::Unknown => return Ok(None),
    }))
}

fn factory(ctx: &mut Ctx<'_>, r: &mut Reader<'_>, with_graph: bool) -> Result<Factory> {
    let graph_json = if with_graph { Some(ctx.slice(dmlc::bytes(r).map_err(|e| e.at("graph_json"))?)?) } else { None };
    let n = r.count(MIN_NDARRAY_BYTES + 8).map_err(|e| e.at("params.count"))?;
    let names = dmlc::vec_string(r).map_err(|e| e.at("params.names"))?;
    if names.len() as u64 != n {
        return Err(Error::mismatch(format!("{n} parameters but {} names", names.len())).at("params.names"));
    }
    let params = read_named_tensors(ctx.buf, r, names).map_err(|e| e.at("params"))?;
    let module_name = dmlc::string(r).map_err(|e| e.at("module_name"))?;
    Ok(Factory { graph_json, params, module_name })
}

fn const_loader(ctx: &mut Ctx<'_>, r: &mut Reader<'_>) -> Result<ConstLoader> {
    let vars = dmlc::vec_string(r).map_err(|e| e.at("vars"))?;
    let n = r.count(MIN_NDARRAY_BYTES).map_err(|e| e.at("arrays.count"))?;
    if n != vars.len() as u64 {
        return Err(Error::mismatch(format!("{} variables but {n} arrays", vars.len())).at("arrays.count"));
    }
    let arrays = read_named_tensors(ctx.buf, r, vars).map_err(|e| e.at("arrays"))?;
    let symbols = dmlc::vec_string(r).map_err(|e| e.at("symbols"))?;
    let m = r.count(8).map_err(|e| e.at("const_vars.count"))?;
    if m != symbols.len() as u64 {
        return Err(Error::mismatch(format!("{} symbols but {m} variable lists", symbols.len())).at("const_vars.count"));
    }
    let mut const_vars = Vec::with_capacity(m as usize);
    for i in 0..m {
        const_vars.push(dmlc::vec_string(r).map_err(|e| e.at(format!("const_vars[{i}]")))?);
    }
    Ok(ConstLoader { arrays, symbols, const_vars })
}

fn function_info(ctx: &mut Ctx<'_>, r: &mut Reader<'_>) -> Result<FunctionInfo> {
    let key = dmlc::string(r).map_err(|e| e.at("key"))?;
    let name = dmlc::string(r).map_err(|e| e.at("name"))?;
    let arg_types = dmlc::vec::<DType>(r).map_err(|e| e.at("arg_types"))?;
    let launch_param_tags = dmlc::vec_string(r).map_err(|e| e.at("launch_param_tags"))?;
    ctx.framing_used = true;
    let arg_extra_tags = if ctx.framing.function_info_extra_tags {
        Some(dmlc::vec::<i32>(r).map_err(|e| e.at("arg_extra_tags"))?)
    } else {
        None
    };
    Ok(FunctionInfo { key, name, arg_types, launch_param_tags, arg_extra_tags })
}

fn fmap(ctx: &mut Ctx<'_>, r: &mut Reader<'_>) -> Result<Vec<FunctionInfo>> {
    let n = r.count(32).map_err(|e| e.at("fmap"))?;
    let mut functions = Vec::with_capacity(n as usize);
    for i in 0..n {
        functions.push(function_info(ctx, r).map_err(|e| e.at(format!("fmap[{i}]")))?);
    }
    Ok(functions)
}

fn device(key: &str, ctx: &mut Ctx<'_>, r: &mut Reader<'_>) -> Result<DeviceModule> {
    if key == "metal" {
        ctx.framing_used = true;
        if ctx.framing.metal_source_map {
            let version = dmlc::string(r).map_err(|e| e.at("version"))?;
            let n = r.count(16).map_err(|e| e.at("smap"))?;
            let mut sources = Vec::with_capacity(n as usize);
            for i in 0..n {
                let name = dmlc::string(r).map_err(|e| e.at(format!("smap[{i}].name")))?;
                let src = ctx.slice(dmlc::bytes(r).map_err(|e| e.at(format!("smap[{i}].source")))?)?;
                sources.push((name, src));
            }
            let functions = fmap(ctx, r)?;
            let fmt = dmlc::string(r).map_err(|e| e.at("fmt"))?;
            return Ok(DeviceModule { version: Some(version), fmt, functions, code: DeviceCode::Sources(sources) });
        }
    }
    let fmt = dmlc::string(r).map_err(|e| e.at("fmt"))?;
    let functions = fmap(ctx, r)?;
    let code = if key == "vulkan" {
        let n = r.count(20).map_err(|e| e.at("smap"))?;
        let mut shaders = Vec::with_capacity(n as usize);
        for i in 0..n {
            let at = |e: Error| e.at(format!("smap[{i}]"));
            let name = dmlc::string(r).map_err(at)?;
            let flag = r.u32().map_err(at)?;
            let words = dmlc::vec::<u32>(r).map_err(at)?;
            shaders.push(SpirvShader { name, flag, words });
        }
        DeviceCode::Spirv(shaders)
    } else {
        DeviceCode::Data(ctx.slice(dmlc::bytes(r).map_err(|e| e.at("data"))?)?)
    };
    Ok(DeviceModule { version: None, fmt, functions, code })
}

fn relax(code: Bytes) -> RelaxExecutable {
    let mut r = Reader::new(code.as_slice());
    let magic = r.u64().ok();
    let version = magic.and_then(|_| r.dmlc_string().ok()).map(str::to_string);
    RelaxExecutable { code, magic, version }
}

/// The error for a type key the legacy reader cannot step over.
pub(super) fn unknown_key(key: &str, offset: usize) -> Error {
    let known: Vec<&str> = DECODED_KEYS.iter().map(|(k, _)| *k).collect();
    Error::new(ErrorKind::Unsupported(format!(
        "unknown module type key {key:?} at offset {offset}: legacy payloads carry no length, so the rest of the blob \
         cannot be read (known keys: {})",
        known.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(ModuleClass::of("_lib"), ModuleClass::HostLibrary);
        assert_eq!(ModuleClass::of("cuda"), ModuleClass::Device);
        assert_eq!(ModuleClass::of("GraphExecutorFactory"), ModuleClass::Executor);
        assert_eq!(ModuleClass::of("relax.VMExecutable"), ModuleClass::VirtualMachine);
        assert_eq!(ModuleClass::of("tensorrt"), ModuleClass::External);
        assert_eq!(ModuleClass::of("whatever"), ModuleClass::Unknown);
        assert_eq!(ModuleClass::of("hexagon"), ModuleClass::Device);
        assert_eq!(ModuleClass::of("GraphRuntimeFactory"), ModuleClass::Executor);
    }
}
