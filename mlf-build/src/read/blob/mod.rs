//! TVM module serialization blobs: what `export_library` embeds in a shared object (or a
//! `devc.c`/`devc.o`) when the exported module imports others.
//!
//! Three layouts exist:
//!
//! | layout | symbol | TVM | shape |
//! |---|---|---|---|
//! | [`Layout::Legacy`] | `__tvm_dev_mblob` | ≤ 0.20 | `u64 nbytes, u64 count, {key, payload}…, "_import_tree", row_ptr, child_indices`; payloads carry no length |
//! | [`Layout::Ffi021`] | `__tvm_ffi_library_bin` | 0.21 | the legacy layout under the tvm-ffi symbol |
//! | [`Layout::Ffi`] | `__tvm_ffi__library_bin` | ≥ 0.22 | `u64 nbytes, indptr, child_indices, {kind, [payload string]}…` |
//!
//! [`parse`] reads a blob into a [`Blob`] (module index, type keys, payloads decoded where TVM
//! documents them, the import tree); [`source`] finds blobs in ELF objects, C array literals,
//! raw files and `.tar` exports; `cli::blob` makes `cargo mlf inspect`'s report of them and
//! `testing::blob` writes them for tests;
//! [`device::device_modules_in_code`] lets the MLF reader refuse code that carries device
//! modules. Every read is bounds-checked and bounded by the blob's `nbytes`.

pub mod abi;
pub mod c_array;
pub mod device;
mod ffi;
pub mod layout;
mod legacy;
pub mod payload;
pub mod source;
pub mod tree;

use crate::error::Result;
use crate::support::bytes::Bytes;

pub use layout::{
    FFI_SYMBOL, FFI021_SYMBOL, IMPORT_TREE_KEY, LEGACY_SYMBOL, LIB_KEY, Layout, blob_extent, sniff_layout,
};
pub use payload::{Framing, ModuleClass, Payload};
pub use tree::{Blob, ImportTree, Module};

/// Parses a blob of a known layout. `data` must start at the blob; bytes after `8 + nbytes` are
/// ignored (a symbol's section usually continues past it).
pub fn parse(data: &Bytes, layout: Layout) -> Result<Blob> {
    let bytes = blob_extent(data)?;
    if layout.is_legacy_framing() { legacy::parse(&bytes, layout) } else { ffi::parse(&bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn symbol_names_select_layouts() {
        assert_eq!(Layout::from_symbol("__tvm_dev_mblob"), Some(Layout::Legacy));
        assert_eq!(Layout::from_symbol("mylib___tvm_dev_mblob"), Some(Layout::Legacy));
        assert_eq!(Layout::from_symbol("___tvm_dev_mblob"), Some(Layout::Legacy));
        assert_eq!(Layout::from_symbol("__tvm_ffi_library_bin"), Some(Layout::Ffi021));
        assert_eq!(Layout::from_symbol("__tvm_ffi__library_bin"), Some(Layout::Ffi));
        assert_eq!(Layout::from_symbol("mylib___tvm_ffi__library_bin"), Some(Layout::Ffi));
        assert_eq!(Layout::from_symbol("__tvm_dev_mblob_nbytes"), None);
        assert_eq!(Layout::from_symbol("__tvm_ffi__library_ctx"), None);
    }

    #[test]
    fn extent_is_bounded_by_the_data() {
        let mut b = 4u64.to_le_bytes().to_vec();
        b.extend_from_slice(&[1, 2, 3]);
        let e = blob_extent(&Bytes::new(b)).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
        assert_eq!(e.field.as_deref(), Some("nbytes"));
        let e = blob_extent(&Bytes::new(u64::MAX.to_le_bytes().to_vec())).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("nbytes"));
    }
}
