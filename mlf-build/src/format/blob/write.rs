//! Writes blobs in each layout, encodes payloads from their decoded form, and writes the
//! `devc.c` text TVM generates around a blob. Used to build test inputs and to check that the
//! reader keeps everything (`write(read(x)) == x`).

use std::fmt::Write as _;

use super::dmlc::{put_bytes, put_dtype, put_u64, put_vec_dtype, put_vec_i32, put_vec_string, put_vec_u32, put_vec_u64};
use super::payload::{DeviceCode, Factory, Payload};
use super::tree::ImportTree;
use super::{Blob, Layout, IMPORT_TREE_KEY, LIB_KEY};
use crate::format::params::{write_ndarray, ParamTensor};

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
            put_vec_u64(&mut body, &t.row_ptr);
            put_vec_u64(&mut body, &t.child_indices);
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
        put_vec_u64(&mut body, &t.row_ptr);
        put_vec_u64(&mut body, &t.child_indices);
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
            put_bytes(&mut out, d.fmt.as_bytes());
            put_u64(&mut out, d.functions.len() as u64);
            for f in &d.functions {
                put_bytes(&mut out, f.key.as_bytes());
                put_bytes(&mut out, f.name.as_bytes());
                put_vec_dtype(&mut out, &f.arg_types);
                put_vec_string(&mut out, &f.launch_param_tags);
                if let Some(tags) = &f.arg_extra_tags {
                    put_vec_i32(&mut out, tags);
                }
            }
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
                        put_vec_u32(&mut out, &s.words);
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
            graph_json: Some(crate::bytes::Bytes::new(graph_json.to_vec())),
            params: params.to_vec(),
            module_name: module_name.to_string(),
        },
    );
    out
}

/// A device module payload with one data string (`cuda`, `opencl`, `hip`, …). Each function is
/// `(name, arg_types, launch_param_tags)`; `extra_tags` adds `arg_extra_tags` (all 0) to each.
pub fn device_payload(fmt: &str, functions: &[(&str, &[crate::dtype::DType], &[&str])], data: &[u8], extra_tags: bool) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, fmt.as_bytes());
    put_u64(&mut out, functions.len() as u64);
    for (name, types, tags) in functions {
        put_bytes(&mut out, name.as_bytes());
        put_bytes(&mut out, name.as_bytes());
        put_u64(&mut out, types.len() as u64);
        for t in *types {
            put_dtype(&mut out, *t);
        }
        put_vec_string(&mut out, tags);
        if extra_tags {
            put_vec_i32(&mut out, &vec![0; types.len()]);
        }
    }
    put_bytes(&mut out, data);
    out
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
