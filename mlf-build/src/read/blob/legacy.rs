//! The legacy layout (`__tvm_dev_mblob`, TVM ≤ 0.20; `__tvm_ffi_library_bin`, TVM 0.21):
//!
//! ```text
//! u64 nbytes
//! u64 count                         // modules + 1 when an import tree follows
//! count × { str key; payload }      // "_lib" has no payload; "_import_tree" is followed by
//!                                   // vec<u64> row_ptr, vec<u64> child_indices (written last)
//! ```
//!
//! Payloads carry no length: each is decoded ([`super::payload`]) to find the next key.

use super::layout::{IMPORT_TREE_KEY, Layout};
use super::payload::{self, Ctx, Framing, Payload};
use super::tree::{Blob, ImportTree, Module};
use crate::error::{Error, Result};
use crate::read::dmlc;
use crate::support::bytes::{Bytes, Reader};

/// Reads a legacy-layout blob (`bytes` is exactly `8 + nbytes` long). Tries each payload framing
/// variant while the failure depended on it.
pub(super) fn parse(bytes: &Bytes, layout: Layout) -> Result<Blob> {
    let (mut blob, framing) = Framing::first_that_reads(|framing, used| parse_with(bytes, layout, framing, used))?;
    blob.framing = framing;
    Ok(blob)
}

/// Reads the blob with one framing variant; `framing` is left for [`parse`] to set.
fn parse_with(bytes: &Bytes, layout: Layout, framing: Framing, used: &mut bool) -> Result<Blob> {
    let mut r = Reader::new(bytes.as_slice());
    r.u64().map_err(|e| e.at("nbytes"))?;
    // Every entry has at least its key's length field.
    let count = r.count(8).map_err(|e| e.at("count"))?;
    let mut ctx = Ctx { buf: bytes, framing, framing_used: false, legacy: true };
    let mut modules: Vec<Module> = Vec::new();
    let mut import_tree = None;
    for entry in 0..count {
        let offset = r.pos();
        let index = modules.len();
        let field = format!("modules[{index}]");
        let key = dmlc::string(&mut r).map_err(|e| e.at("type_key").at(&field))?;
        if import_tree.is_some() {
            return Err(Error::invalid(format!(
                "entry {entry} ({key:?} at offset {offset}) follows _import_tree, which TVM always writes last"
            ))
            .at("import_tree"));
        }
        if key.is_empty() {
            return Err(Error::invalid(format!("empty type key at offset {offset}")).at("type_key").at(&field));
        }
        if key == IMPORT_TREE_KEY {
            let row_ptr = dmlc::vec::<u64>(&mut r).map_err(|e| e.at("import_tree.row_ptr"))?;
            let child_indices = dmlc::vec::<u64>(&mut r).map_err(|e| e.at("import_tree.child_indices"))?;
            import_tree = Some(ImportTree { row_ptr, child_indices });
            continue;
        }
        let start = r.pos();
        let decoded = payload::decode(&key, &mut ctx, &mut r).map_err(|e| e.at("payload").at(&field));
        *used |= ctx.framing_used;
        let decoded = match decoded? {
            Some(p) => p,
            None => return Err(payload::unknown_key(&key, offset).at("type_key").at(&field)),
        };
        let payload = if matches!(decoded, Payload::Lib) {
            Bytes::new(Vec::new())
        } else {
            bytes.slice(start..r.pos()).ok_or_else(|| Error::invalid("payload outside the blob").at(&field))?
        };
        modules.push(Module { index, type_key: key, offset, payload, decoded });
    }
    dmlc::expect_end(&r, "last entry").map_err(|e| e.at("nbytes"))?;
    if let Some(tree) = &import_tree {
        if modules.is_empty() {
            return Err(Error::invalid("an import tree but no modules").at("import_tree"));
        }
        tree.validate(modules.len()).map_err(|e| e.at("import_tree"))?;
    }
    Ok(Blob { layout, bytes: bytes.clone(), modules, import_tree, framing: None, warnings: Vec::new() })
}
