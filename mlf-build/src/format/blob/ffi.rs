//! The tvm-ffi layout (`__tvm_ffi__library_bin`, TVM ≥ 0.22; `ProcessLibraryBin` in tvm-ffi):
//!
//! ```text
//! u64 nbytes
//! vec<u64> indptr                   // n_modules + 1 items
//! vec<u64> child_indices
//! n_modules × { str kind; if kind != "_lib": str payload }
//! ```

use super::payload::{self, Ctx, Framing, Payload};
use super::tree::ImportTree;
use super::{dmlc, Blob, Layout, Module, LIB_KEY};
use crate::bytes::{Bytes, Reader};
use crate::error::{Error, Result};

/// Reads a tvm-ffi-layout blob (`bytes` is exactly `8 + nbytes` long).
pub(super) fn parse(bytes: &Bytes) -> Result<Blob> {
    let mut r = Reader::new(bytes.as_slice());
    r.u64().map_err(|e| e.at("nbytes"))?;
    let row_ptr = dmlc::vec_u64(&mut r).map_err(|e| e.at("import_tree.row_ptr"))?;
    let child_indices = dmlc::vec_u64(&mut r).map_err(|e| e.at("import_tree.child_indices"))?;
    if row_ptr.len() < 2 {
        return Err(Error::invalid(format!(
            "indptr has {} items: the blob must list at least one module (n_modules = items - 1)",
            row_ptr.len()
        ))
        .at("import_tree.row_ptr"));
    }
    let tree = ImportTree { row_ptr, child_indices };
    let n = tree.len();
    // Each module needs at least its kind's length field.
    if n as u64 > r.remaining() as u64 / 8 {
        return Err(Error::mismatch(format!(
            "the import tree lists {n} modules but only {} bytes follow it",
            r.remaining()
        ))
        .at("import_tree.row_ptr"));
    }
    tree.validate(n).map_err(|e| e.at("import_tree"))?;
    let mut modules = Vec::with_capacity(n);
    let mut warnings = Vec::new();
    let mut framing = None;
    for index in 0..n {
        let field = format!("modules[{index}]");
        let offset = r.pos();
        let key = dmlc::string(&mut r).map_err(|e| e.at("type_key").at(&field))?;
        if key.is_empty() {
            return Err(Error::invalid(format!("empty kind at offset {offset}")).at("type_key").at(&field));
        }
        if key == LIB_KEY {
            modules.push(Module { index, type_key: key, offset, payload: Bytes::new(Vec::new()), decoded: Payload::Lib });
            continue;
        }
        let range = dmlc::bytes(&mut r).map_err(|e| e.at("payload").at(&field))?;
        let body = bytes.slice(range.clone()).ok_or_else(|| Error::invalid("payload outside the blob").at(&field))?;
        let (decoded, used) = decode_body(&key, &body);
        let decoded = match decoded {
            Ok(p) => {
                if used.is_some() {
                    framing = used;
                }
                p
            }
            Err(e) => {
                warnings.push(format!(
                    "module {index} ({key}, payload at offset {}): payload not decoded: {e}",
                    range.start
                ));
                Payload::Opaque
            }
        };
        modules.push(Module { index, type_key: key, offset, payload: body, decoded });
    }
    dmlc::expect_end(&r, "last module").map_err(|e| e.at("nbytes"))?;
    Ok(Blob { layout: Layout::Ffi, bytes: bytes.clone(), modules, import_tree: Some(tree), framing, warnings })
}

/// Decodes a length-prefixed payload, trying framing variants; unknown kinds are opaque.
fn decode_body(key: &str, body: &Bytes) -> (Result<Payload>, Option<Framing>) {
    let mut first_err = None;
    for framing in Framing::CANDIDATES {
        let mut ctx = Ctx { buf: body, framing, framing_used: false, legacy: false };
        let mut r = Reader::new(body.as_slice());
        let result = match payload::decode(key, &mut ctx, &mut r) {
            Ok(None) => Ok(Payload::Opaque),
            Ok(Some(p)) => dmlc::expect_end(&r, "payload").map(|()| p),
            Err(e) => Err(e),
        };
        let used = ctx.framing_used;
        match result {
            Ok(p) => return (Ok(p), used.then_some(framing)),
            Err(e) => {
                first_err.get_or_insert(e);
                if !used {
                    break;
                }
            }
        }
    }
    (Err(first_err.unwrap_or_else(|| Error::invalid("undecodable payload"))), None)
}
