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
mod legacy;
pub mod payload;
pub mod source;
pub mod tree;

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::read::detect::Detected;
use crate::support::bytes::{Bytes, Reader};

pub use payload::{Framing, ModuleClass, Payload};
pub use tree::ImportTree;

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

/// A parsed blob.
#[derive(Clone, Debug)]
pub struct Blob {
    /// Its layout.
    pub layout: Layout,
    /// The whole blob, `nbytes` header included (exactly `8 + nbytes` bytes).
    pub bytes: Bytes,
    /// The modules, in index order (root = index 0, DFS order as TVM numbers them). In the
    /// legacy layout the `_import_tree` entry is not a module.
    pub modules: Vec<Module>,
    /// The import tree (CSR). `None` for a legacy blob without `_import_tree` (TVM ≤ 0.6 or a
    /// root without imports), where every module is an import of the host library.
    pub import_tree: Option<ImportTree>,
    /// The payload framing variant that read this blob, when a payload depended on it (device
    /// modules' function info, `metal`); `None` otherwise.
    pub framing: Option<Framing>,
    /// Non-fatal findings (payloads of the tvm-ffi layout that could not be decoded, …).
    pub warnings: Vec<String>,
}

/// One module of a blob.
#[derive(Clone, Debug)]
pub struct Module {
    /// Its index in the module list (and the import tree).
    pub index: usize,
    /// The type key (`GraphExecutorFactory`, `cuda`, `_lib`, `relax.VMExecutable`, …).
    pub type_key: String,
    /// Offset of its key's length field inside the blob.
    pub offset: usize,
    /// The payload bytes as stored: everything after the key up to the next entry (legacy), or
    /// the contents of the payload string (tvm-ffi). Empty for `_lib`.
    pub payload: Bytes,
    /// What the payload holds, where its format is known.
    pub decoded: Payload,
}

impl Module {
    /// The payload size in bytes.
    pub fn bytes(&self) -> u64 {
        self.payload.len() as u64
    }

    /// What kind of module this is.
    pub fn class(&self) -> ModuleClass {
        ModuleClass::of(&self.type_key)
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

/// Parses a blob of a known layout. `data` must start at the blob; bytes after `8 + nbytes` are
/// ignored (a symbol's section usually continues past it).
pub fn parse(data: &Bytes, layout: Layout) -> Result<Blob> {
    let bytes = blob_extent(data)?;
    if layout.is_legacy_framing() { legacy::parse(&bytes, layout) } else { ffi::parse(&bytes) }
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

/// The refusal `mlf_build::open` gives for a TVM export: names the ABI generation (tvm-ffi code,
/// TVM ≥ 0.21, can never be built) and what to export instead.
pub fn refusal(path: &Path, detected: &Detected) -> Error {
    let abi = source::scan_detected(path, detected).map(|s| s.abi.generation).unwrap_or(abi::Generation::Unknown);
    let msg = match abi {
        abi::Generation::TvmFfi => format!(
            "this TVM export was {}; use `cargo mlf inspect` to see what it holds",
            abi::TVM_FFI_REFUSAL
        ),
        _ => "this is a TVM module export (export_library), not a model mlf can build: export a Model Library Format archive \
              (tvm.micro.export_model_library_format, TVM ≤ 0.18) instead; use `cargo mlf inspect` to see what it holds"
            .to_string(),
    };
    Error::unsupported(msg).in_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

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
