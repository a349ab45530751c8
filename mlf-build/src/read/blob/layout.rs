//! The three blob layouts, the symbols and keys they use, and a blob's extent.

use crate::error::{Error, ErrorKind, Result};
use crate::support::bytes::{Bytes, Reader};

/// The symbol TVM ≤ 0.20 uses (legacy layout).
pub const LEGACY_SYMBOL: &str = "__tvm_dev_mblob";
/// The symbol TVM 0.21 uses (legacy layout, tvm-ffi name with one `_`).
pub const FFI021_SYMBOL: &str = "__tvm_ffi_library_bin";
/// The symbol TVM ≥ 0.22 uses (tvm-ffi layout, two `_`).
pub const FFI_SYMBOL: &str = "__tvm_ffi__library_bin";

/// The type key of the placeholder for the host library (the DSO-exportable `llvm`/`c` modules,
/// merged); it has no payload.
pub const LIB_KEY: &str = "_lib";
/// The legacy layout's key for the import tree.
pub const IMPORT_TREE_KEY: &str = "_import_tree";

/// Which serialization layout a blob uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `__tvm_dev_mblob`, TVM up to 0.20: leading count, payloads without length, `_import_tree`
    /// entry last.
    Legacy,
    /// `__tvm_ffi_library_bin`, TVM 0.21: the legacy layout under the first tvm-ffi symbol name.
    Ffi021,
    /// `__tvm_ffi__library_bin`, TVM 0.22 and later: import tree first, length-prefixed payloads.
    Ffi,
}

impl Layout {
    /// The name used in reports: `legacy`, `ffi-0.21` or `ffi`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Legacy => "legacy",
            Layout::Ffi021 => "ffi-0.21",
            Layout::Ffi => "ffi",
        }
    }

    /// The unprefixed symbol TVM gives a blob of this layout.
    pub fn symbol(self) -> &'static str {
        match self {
            Layout::Legacy => LEGACY_SYMBOL,
            Layout::Ffi021 => FFI021_SYMBOL,
            Layout::Ffi => FFI_SYMBOL,
        }
    }

    /// The TVM releases that write this layout.
    pub fn tvm_versions(self) -> &'static str {
        match self {
            Layout::Legacy => "TVM ≤ 0.20",
            Layout::Ffi021 => "TVM 0.21",
            Layout::Ffi => "TVM ≥ 0.22",
        }
    }

    /// Whether entries use the legacy framing (count first, unprefixed payloads).
    pub fn is_legacy_framing(self) -> bool {
        !matches!(self, Layout::Ffi)
    }

    /// The layout a symbol name selects, allowing a `c_symbol_prefix` (`mylib___tvm_dev_mblob`)
    /// and Mach-O's leading underscore. `None` for other symbols (including
    /// `__tvm_dev_mblob_nbytes`).
    pub fn from_symbol(name: &str) -> Option<Layout> {
        // Longest first: the tvm-ffi names share their tail.
        [Layout::Ffi, Layout::Ffi021, Layout::Legacy].into_iter().find(|l| name.ends_with(l.symbol()))
    }
}

/// Reads the `u64 nbytes` header of a blob that starts at `data[0]` and returns the blob's
/// bytes (`8 + nbytes`). Bytes after the blob are not looked at.
pub fn blob_extent(data: &Bytes) -> Result<Bytes> {
    let mut r = Reader::new(data.as_slice());
    let nbytes = r.u64().map_err(|e| e.at("nbytes"))?;
    nbytes
        .checked_add(8)
        .and_then(|total| usize::try_from(total).ok())
        .and_then(|total| data.slice(0..total))
        .ok_or_else(|| {
            Error::new(ErrorKind::Truncated {
                offset: 8,
                needed: nbytes,
                available: data.len().saturating_sub(8) as u64,
                count: None,
            })
            .at("nbytes")
        })
}

/// Guesses the layout of a raw blob (no symbol name to go by): in the tvm-ffi layout the third
/// `u64` is `indptr[0] = 0`; in the legacy layout it is the first key's length (never 0). A
/// raw blob cannot tell TVM 0.21 from older legacy blobs, so this never returns
/// [`Layout::Ffi021`].
pub fn sniff_layout(data: &[u8]) -> Layout {
    let u64_at = |o: usize| data.get(o..o + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    match (u64_at(8), u64_at(16)) {
        (Some(n), Some(0)) if n >= 1 => Layout::Ffi,
        _ => Layout::Legacy,
    }
}
