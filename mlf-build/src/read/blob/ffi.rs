//! The tvm-ffi layout (`__tvm_ffi__library_bin`, TVM ≥ 0.22; `ProcessLibraryBin` in tvm-ffi):
//!
//! ```text
//! u64 nbytes
//! vec<u64> indptr                   // n_modules + 1 items
//! vec<u64> child_indices
//! n_modules × { str kind; if kind != "_lib": str payload }
//! ```

use super::layout::{LIB_KEY, Layout};
use super::payload::{self, Ctx, Framing, Payload};
use super::tree::{Blob, ImportTree, Module};
use crate::error::{Error, Result};
use crate::read::dmlc;
use crate::support::bytes::{Bytes, Reader};

/// Reads a tvm-ffi-layout blob (`bytes` is exactly `8 + nbytes` long).
pub(super) fn parse(bytes: &Bytes) -> Result<Blob> {
    let mut r = Reader::new(bytes.as_slice());
    r.u64().map_err(|e| e.at("nbytes"))?;
    let row_ptr = dmlc::vec::<u64>(&mut r).map_err(|e| e.at("import_tree.row_ptr"))?;
    let child_indices = dmlc::vec::<u64>(&mut r).map_err(|e| e.at("import_tree.child_indices"))?;
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
    // The structure first: kinds and payload ranges.
    let mut entries = Vec::with_capacity(n);
    for index in 0..n {
        let field = format!("modules[{index}]");
        let offset = r.pos();
        let key = dmlc::string(&mut r).map_err(|e| e.at("type_key").at(&field))?;
        if key.is_empty() {
            return Err(Error::invalid(format!("empty kind at offset {offset}")).at("type_key").at(&field));
        }
        let body = if key == LIB_KEY {
            None
        } else {
            let range = dmlc::bytes(&mut r).map_err(|e| e.at("payload").at(&field))?;
            Some(bytes.slice(range).ok_or_else(|| Error::invalid("payload outside the blob").at(&field))?)
        };
        entries.push((key, offset, body));
    }
    dmlc::expect_end(&r, "last module").map_err(|e| e.at("nbytes"))?;

    // Then the payloads, with one framing variant for the whole blob when one reads them all.
    let mut warnings = Vec::new();
    let all = Framing::first_that_reads(|framing, used| {
        entries.iter().map(|(key, _, body)| decode_body(key, body.as_ref(), framing, used)).collect::<Result<Vec<_>>>()
    });
    let (decoded, framing) = match all {
        Ok(all) => all,
        // No single variant reads every payload: decode each on its own, keeping failures opaque.
        Err(_) => {
            let each = entries.iter().enumerate().map(|(index, (key, _, body))| {
                match Framing::first_that_reads(|framing, used| decode_body(key, body.as_ref(), framing, used)) {
                    Ok((p, _)) => p,
                    Err(e) => {
                        warnings.push(format!("module {index} ({key}): payload not decoded: {e}"));
                        Payload::Opaque
                    }
                }
            });
            (each.collect(), None)
        }
    };
    let modules = entries
        .into_iter()
        .zip(decoded)
        .enumerate()
        .map(|(index, ((type_key, offset, body), decoded))| Module {
            index,
            type_key,
            offset,
            payload: body.unwrap_or_else(|| Bytes::new(Vec::new())),
            decoded,
        })
        .collect();
    Ok(Blob { layout: Layout::Ffi, bytes: bytes.clone(), modules, import_tree: Some(tree), framing, warnings })
}

/// Decodes one length-prefixed payload (`None` for `_lib`); unknown kinds are opaque.
fn decode_body(key: &str, body: Option<&Bytes>, framing: Framing, used: &mut bool) -> Result<Payload> {
    let Some(body) = body else { return Ok(Payload::Lib) };
    let mut ctx = Ctx { buf: body, framing, framing_used: false, legacy: false };
    let mut r = Reader::new(body.as_slice());
    let result = match payload::decode(key, &mut ctx, &mut r) {
        Ok(None) => Ok(Payload::Opaque),
        Ok(Some(p)) => dmlc::expect_end(&r, "payload").map(|()| p),
        Err(e) => Err(e),
    };
    *used |= ctx.framing_used;
    result
}
