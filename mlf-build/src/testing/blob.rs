//! Writes blobs in each layout, encodes payloads from their decoded form, and writes the
//! `devc.c` text TVM generates around a blob. Used to build test inputs and to check that the
//! reader keeps everything (`write(read(x)) == x`).

use std::fmt::Write as _;

use super::params::write_ndarray;
use crate::read::blob::payload::{DeviceCode, DeviceModule, Factory, FunctionInfo, Payload};
use crate::read::blob::tree::ImportTree;
use crate::read::blob::{Blob, IMPORT_TREE_KEY, LIB_KEY, Layout};
use crate::read::dmlc::{put_bytes, put_u64, put_vec, put_vec_string};
use crate::read::params::ParamTensor;

/// A module to write: its type key and its payload as stored (ignored for `_lib`).
#[derive(Clone, Copy, Debug)]
pub struct ModuleSpec<'a> {
    /// Type key.
    pub type_key: &'a str,
    /// Payload bytes (legacy: written as is; tvm-ffi: written as a length-prefixed string).
    pub payload: &'a [u8],
}

/// Writes a blob (`u64 nbytes` header included). For the legacy layouts `tree = None` writes
/// the pre-import-tree form (no `_import_tree` entry); for the tvm-ffi layout `None` means no
/// module imports another.
pub fn write_blob(layout: Layout, modules: &[ModuleSpec<'_>], tree: Option<&ImportTree>) -> Vec<u8> {
    let mut body = Vec::new();
    if layout.is_legacy_framing() {
        put_u64(&mut body, (modules.len() + usize::from(tree.is_some())) as u64);
        for m in modules {
            put_bytes(&mut body, m.type_key.as_bytes());
            if m.type_key != LIB_KEY {
                body.extend_from_slice(m.payload);
            }
        }
        if let Some(t) = tree {
            put_bytes(&mut body, IMPORT_TREE_KEY.as_bytes());
            put_vec(&mut body, &t.row_ptr);
            put_vec(&mut body, &t.child_indices);
        }
    } else {
        let flat;
        let t = match tree {
            Some(t) => t,
            None => {
                flat = ImportTree::from_imports(&vec![Vec::new(); modules.len()]);
                &flat
            }
        };
        put_vec(&mut body, &t.row_ptr);
        put_vec(&mut body, &t.child_indices);
        for m in modules {
            put_bytes(&mut body, m.type_key.as_bytes());
            if m.type_key != LIB_KEY {
                put_bytes(&mut body, m.payload);
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + 8);
    put_u64(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out
}

impl Blob {
    /// Writes this blob again from its modules (stored payloads) and import tree. For a blob TVM
    /// wrote this gives back the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let specs: Vec<ModuleSpec<'_>> =
            self.modules.iter().map(|m| ModuleSpec { type_key: &m.type_key, payload: m.payload.as_slice() }).collect();
        write_blob(self.layout, &specs, self.import_tree.as_ref())
    }
}

fn put_tensors(out: &mut Vec<u8>, tensors: &[ParamTensor]) {
    for t in tensors {
        write_ndarray(out, t.dtype, &t.shape, &t.data);
    }
}

/// Encodes a decoded payload in the given layout's framing (the inverse of the reader).
/// `None` for [`Payload::Opaque`], which keeps no decoded form.
pub fn encode_payload(p: &Payload, layout: Layout) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match p {
        Payload::Lib | Payload::MetadataModule => {}
        Payload::Factory(f) => encode_factory(&mut out, f),
        Payload::CSource(c) => {
            put_bytes(&mut out, &c.code);
            put_bytes(&mut out, c.fmt.as_bytes());
            put_vec_string(&mut out, &c.func_names);
            put_vec_string(&mut out, &c.const_vars);
        }
        Payload::ConstLoader(c) => {
            let vars: Vec<&str> = c.arrays.iter().map(|t| t.name.as_str()).collect();
            put_vec_string(&mut out, &vars);
            put_u64(&mut out, c.arrays.len() as u64);
            put_tensors(&mut out, &c.arrays);
            put_vec_string(&mut out, &c.symbols);
            put_u64(&mut out, c.const_vars.len() as u64);
            for v in &c.const_vars {
                put_vec_string(&mut out, v);
            }
        }
        Payload::Device(d) => {
            let put_fmap = |out: &mut Vec<u8>| {
                put_u64(out, d.functions.len() as u64);
                for f in &d.functions {
                    put_bytes(out, f.key.as_bytes());
                    put_bytes(out, f.name.as_bytes());
                    put_vec(out, &f.arg_types);
                    put_vec_string(out, &f.launch_param_tags);
                    if let Some(tags) = &f.arg_extra_tags {
                        put_vec(out, tags);
                    }
                }
            };
            if let (Some(version), DeviceCode::Sources(v)) = (&d.version, &d.code) {
                // Versioned metal: version, sources, fmap, fmt.
                put_bytes(&mut out, version.as_bytes());
                put_u64(&mut out, v.len() as u64);
                for (name, src) in v {
                    put_bytes(&mut out, name.as_bytes());
                    put_bytes(&mut out, src);
                }
                put_fmap(&mut out);
                put_bytes(&mut out, d.fmt.as_bytes());
                return Some(out);
            }
            put_bytes(&mut out, d.fmt.as_bytes());
            put_fmap(&mut out);
            match &d.code {
                DeviceCode::Data(b) => put_bytes(&mut out, b),
                DeviceCode::Sources(v) => {
                    put_u64(&mut out, v.len() as u64);
                    for (name, src) in v {
                        put_bytes(&mut out, name.as_bytes());
                        put_bytes(&mut out, src);
                    }
                }
                DeviceCode::Spirv(v) => {
                    put_u64(&mut out, v.len() as u64);
                    for s in v {
                        put_bytes(&mut out, s.name.as_bytes());
                        out.extend_from_slice(&s.flag.to_le_bytes());
                        put_vec(&mut out, &s.words);
                    }
                }
            }
        }
        Payload::Relax(x) => {
            if layout.is_legacy_framing() {
                put_bytes(&mut out, &x.code);
            } else {
                out.extend_from_slice(&x.code);
            }
        }
        Payload::Json(j) => {
            put_bytes(&mut out, j.symbol.as_bytes());
            put_bytes(&mut out, &j.graph_json);
            put_vec_string(&mut out, &j.const_names);
        }
        Payload::Opaque => return None,
    }
    Some(out)
}

fn encode_factory(out: &mut Vec<u8>, f: &Factory) {
    if let Some(g) = &f.graph_json {
        put_bytes(out, g);
    }
    put_u64(out, f.params.len() as u64);
    let names: Vec<&str> = f.params.iter().map(|t| t.name.as_str()).collect();
    put_vec_string(out, &names);
    put_tensors(out, &f.params);
    put_bytes(out, f.module_name.as_bytes());
}

/// A graph executor factory payload from its parts (`GraphExecutorFactory`).
pub fn graph_executor_factory(graph_json: &[u8], params: &[ParamTensor], module_name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_factory(
        &mut out,
        &Factory {
            graph_json: Some(crate::support::bytes::Bytes::new(graph_json.to_vec())),
            params: params.to_vec(),
            module_name: module_name.to_string(),
        },
    );
    out
}

/// A device module payload with one data string (`cuda`, `opencl`, `hip`, …). Each function is
/// `(name, arg_types, launch_param_tags)`; `extra_tags` adds `arg_extra_tags` (all 0) to each.
pub fn device_payload(
    fmt: &str,
    functions: &[(&str, &[crate::support::dtype::DType], &[&str])],
    data: &[u8],
    extra_tags: bool,
) -> Vec<u8> {
    let functions = functions
        .iter()
        .map(|(name, types, tags)| FunctionInfo {
            key: name.to_string(),
            name: name.to_string(),
            arg_types: types.to_vec(),
            launch_param_tags: tags.iter().map(|t| t.to_string()).collect(),
            arg_extra_tags: extra_tags.then(|| vec![0; types.len()]),
        })
        .collect();
    let code = DeviceCode::Data(crate::support::bytes::Bytes::new(data.to_vec()));
    let module = DeviceModule { version: None, fmt: fmt.to_string(), functions, code };
    encode_payload(&Payload::Device(module), Layout::Legacy).expect("a device payload is encoded")
}

/// How TVM printed the array in `devc.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CStyle {
    /// Older releases (e.g. TVM 0.13): `0x%x` items separated by `,`, 20 per line, no trailing
    /// comma.
    Unpadded,
    /// Later releases (legacy and tvm-ffi): `0x%02x,` items, 20 per line, trailing comma.
    Padded,
}

/// The `devc.c` TVM's `PackImportsToC` writes for `blob` under `symbol`; with `system_lib` it
/// also registers the blob from a static initialiser (`TVMBackendRegisterSystemLibSymbol`, or
/// `TVMFFIEnvModRegisterSystemLibSymbol` for the tvm-ffi symbols).
pub fn devc_c(symbol: &str, blob: &[u8], style: CStyle, system_lib: bool) -> String {
    let mut s = String::with_capacity(blob.len() * 5 + 512);
    s.push_str("#ifdef _WIN32\n#define TVM_EXPORT __declspec(dllexport)\n#else\n#define TVM_EXPORT\n#endif\n");
    s.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    let _ = writeln!(s, "TVM_EXPORT extern const unsigned char {symbol}[];");
    let _ = write!(s, "const unsigned char {symbol}[{}] = {{", blob.len());
    match style {
        CStyle::Unpadded => {
            s.push_str("\n  ");
            for (k, b) in blob.iter().enumerate() {
                if k > 0 {
                    s.push_str(if k % 20 == 0 { ",\n  " } else { "," });
                }
                let _ = write!(s, "0x{b:x}");
            }
        }
        CStyle::Padded => {
            for (k, b) in blob.iter().enumerate() {
                if k % 20 == 0 {
                    s.push_str("\n  ");
                }
                let _ = write!(s, "0x{b:02x},");
            }
        }
    }
    s.push_str("\n};\n");
    if system_lib {
        let reg = if Layout::from_symbol(symbol) == Some(Layout::Legacy) {
            "TVMBackendRegisterSystemLibSymbol"
        } else {
            "TVMFFIEnvModRegisterSystemLibSymbol"
        };
        let _ = writeln!(s, "extern int {reg}(const char*, void*);");
        let _ = writeln!(s, "static int {symbol}_reg_ = {reg}(\"{symbol}\", (void*){symbol});");
    }
    s.push_str("#ifdef __cplusplus\n}\n#endif\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::blob::payload::{
        CSourceModule, ConstLoader, DeviceModule, FunctionInfo, JsonRuntime, RelaxExecutable, SpirvShader,
    };
    use crate::read::blob::{Framing, parse};
    use crate::support::bytes::Bytes;
    use crate::support::dtype::DType;

    fn tensor(name: &str, data: &[u8]) -> ParamTensor {
        ParamTensor {
            name: name.into(),
            dtype: DType::U8,
            shape: vec![data.len() as u64],
            data: Bytes::new(data.to_vec()),
        }
    }

    fn info(name: &str, extra: bool) -> FunctionInfo {
        FunctionInfo {
            key: name.into(),
            name: name.into(),
            arg_types: vec![DType::F32, DType::I32],
            launch_param_tags: vec!["blockIdx.x".into(), "threadIdx.x".into()],
            arg_extra_tags: extra.then(|| vec![0, 1]),
        }
    }

    /// One payload of every decoded kind, with the type key that selects it.
    fn payloads(extra: bool, metal_map: bool) -> Vec<(&'static str, Payload)> {
        let b = |s: &[u8]| Bytes::new(s.to_vec());
        vec![
            (
                "GraphExecutorFactory",
                Payload::Factory(Factory {
                    graph_json: Some(b(b"{}")),
                    params: vec![tensor("p0", &[1, 2])],
                    module_name: "default".into(),
                }),
            ),
            (LIB_KEY, Payload::Lib),
            (
                "cuda",
                Payload::Device(DeviceModule {
                    version: None,
                    fmt: "ptx".into(),
                    functions: vec![info("k0", extra)],
                    code: DeviceCode::Data(b(b"PTX")),
                }),
            ),
            (
                "vulkan",
                Payload::Device(DeviceModule {
                    version: None,
                    fmt: "vulkan".into(),
                    functions: vec![info("k1", extra)],
                    code: DeviceCode::Spirv(vec![SpirvShader {
                        name: "k1".into(),
                        flag: 1,
                        words: vec![0x0723_0203, 7],
                    }]),
                }),
            ),
            (
                "metal",
                Payload::Device(DeviceModule {
                    version: metal_map.then(|| "0.1.0".to_string()),
                    fmt: "metal".into(),
                    functions: vec![info("k2", extra)],
                    code: if metal_map {
                        DeviceCode::Sources(vec![("k2".into(), b(b"kernel void k2"))])
                    } else {
                        DeviceCode::Data(b(b"src"))
                    },
                }),
            ),
            (
                "c",
                Payload::CSource(CSourceModule {
                    code: b(b"int x;"),
                    fmt: "c".into(),
                    func_names: vec!["f".into()],
                    const_vars: vec![],
                }),
            ),
            (
                "const_loader",
                Payload::ConstLoader(ConstLoader {
                    arrays: vec![tensor("c0", &[9])],
                    symbols: vec!["f".into()],
                    const_vars: vec![vec!["c0".into()]],
                }),
            ),
            ("metadata_module", Payload::MetadataModule),
            (
                "dnnl_json",
                Payload::Json(JsonRuntime {
                    symbol: "dnnl_0".into(),
                    graph_json: b(b"{\"nodes\":[]}"),
                    const_names: vec!["c0".into()],
                }),
            ),
            (
                "relax.VMExecutable",
                Payload::Relax(RelaxExecutable {
                    code: b(&[&0xD225_DE2F_4214_151Eu64.to_le_bytes()[..], &4u64.to_le_bytes(), b"0.14"].concat()),
                    magic: Some(0xD225_DE2F_4214_151E),
                    version: Some("0.14".into()),
                }),
            ),
        ]
    }

    fn tree() -> ImportTree {
        // 0 imports 1 and 2; 2 imports 3..=9 (a DAG-free tree over ten modules).
        let mut rows = vec![vec![1, 2], vec![], (3..10).collect()];
        rows.resize(10, vec![]);
        ImportTree::from_imports(&rows)
    }

    #[test]
    fn every_payload_round_trips_in_every_layout() {
        for layout in [Layout::Legacy, Layout::Ffi021, Layout::Ffi] {
            for (extra, metal_map) in [(true, true), (false, false), (false, true), (true, false)] {
                let ps = payloads(extra, metal_map);
                let raw: Vec<Vec<u8>> = ps.iter().map(|(_, p)| encode_payload(p, layout).unwrap()).collect();
                let specs: Vec<ModuleSpec<'_>> =
                    ps.iter().zip(&raw).map(|((k, _), r)| ModuleSpec { type_key: k, payload: r }).collect();
                let t = tree();
                let bytes = write_blob(layout, &specs, Some(&t));
                let blob = parse(&Bytes::new(bytes.clone()), layout).unwrap_or_else(|e| panic!("{layout:?}: {e}"));
                assert_eq!(blob.modules.len(), ps.len());
                for ((m, (k, p)), r) in blob.modules.iter().zip(&ps).zip(&raw) {
                    assert_eq!(m.type_key, *k);
                    assert_eq!(&m.decoded, p, "{layout:?} {k}");
                    if *k != LIB_KEY {
                        assert_eq!(m.payload.as_slice(), &r[..], "{layout:?} {k}");
                    }
                }
                assert_eq!(blob.import_tree.as_ref(), Some(&t));
                assert_eq!(
                    blob.framing,
                    Some(Framing { function_info_extra_tags: extra, metal_source_map: metal_map })
                );
                assert_eq!(blob.to_bytes(), bytes);
            }
        }
    }

    #[test]
    fn legacy_without_import_tree() {
        let f = encode_payload(&payloads(true, true)[0].1, Layout::Legacy).unwrap();
        let bytes = write_blob(Layout::Legacy, &[ModuleSpec { type_key: "GraphExecutorFactory", payload: &f }], None);
        let blob = parse(&Bytes::new(bytes.clone()), Layout::Legacy).unwrap();
        assert!(blob.import_tree.is_none());
        assert_eq!(blob.modules.len(), 1);
        assert_eq!(blob.framing, None);
        assert_eq!(blob.to_bytes(), bytes);
    }

    #[test]
    fn ffi_keeps_unknown_kinds_opaque() {
        let bytes = write_blob(
            Layout::Ffi,
            &[
                ModuleSpec { type_key: "my.Custom", payload: b"anything" },
                ModuleSpec { type_key: LIB_KEY, payload: &[] },
            ],
            Some(&ImportTree::from_imports(&[vec![1], vec![]])),
        );
        let blob = parse(&Bytes::new(bytes.clone()), Layout::Ffi).unwrap();
        assert_eq!(blob.modules[0].decoded, Payload::Opaque);
        assert_eq!(blob.modules[0].payload.as_slice(), b"anything");
        assert_eq!(blob.to_bytes(), bytes);
        // A known kind whose payload does not decode is kept opaque, with a warning.
        let bytes = write_blob(Layout::Ffi, &[ModuleSpec { type_key: "cuda", payload: b"xx" }], None);
        let blob = parse(&Bytes::new(bytes), Layout::Ffi).unwrap();
        assert_eq!(blob.modules[0].decoded, Payload::Opaque);
        assert_eq!(blob.warnings.len(), 1);
    }

    #[test]
    fn devc_styles() {
        let blob = [8u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let c = devc_c("__tvm_dev_mblob", &blob, CStyle::Unpadded, false);
        assert!(c.contains("const unsigned char __tvm_dev_mblob[16] = {\n  0x8,0x0,"));
        assert!(c.contains(",0x0\n};\n"));
        let c = devc_c("__tvm_ffi__library_bin", &blob, CStyle::Padded, true);
        assert!(c.contains("= {\n  0x08,0x00,"));
        assert!(c.contains("TVMFFIEnvModRegisterSystemLibSymbol(\"__tvm_ffi__library_bin\""));
        let found = crate::read::blob::c_array::find_blob_arrays(&c).unwrap();
        assert_eq!(found[0].bytes, blob);
    }
}
