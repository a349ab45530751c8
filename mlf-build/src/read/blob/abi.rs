//! Which function ABI a TVM export was generated for: the legacy
//! `TVMValue` packed ABI (TVM ≤ 0.20, every MLF) or the tvm-ffi ABI (TVM ≥ 0.21:
//! `__tvm_ffi_<name>` functions, `TVMFFIAny` arguments, `tvm/ffi/c_api.h`). mlf can build only
//! the former.

use serde::Serialize;

use super::layout::Layout;

/// Why tvm-ffi code is refused, for `mlf_build::open`'s refusal and `cargo mlf inspect`'s
/// blocker alike.
pub const TVM_FFI_REFUSAL: &str = "built for the tvm-ffi ABI (TVM ≥ 0.21): mlf builds only code for the legacy \
                                   TVMValue ABI (TVM ≤ 0.20; Model Library Format from TVM ≤ 0.18) and refuses \
                                   tvm-ffi code";

/// Most pieces of evidence kept per generation.
const MAX_EVIDENCE: usize = 6;

/// An ABI generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generation {
    /// The legacy `TVMValue` packed-function ABI (TVM ≤ 0.20).
    LegacyTvmValue,
    /// The tvm-ffi ABI (TVM ≥ 0.21).
    TvmFfi,
    /// Nothing in the file says.
    Unknown,
}

impl Generation {
    /// `legacy-tvmvalue`, `tvm-ffi` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Generation::LegacyTvmValue => "legacy-tvmvalue",
            Generation::TvmFfi => "tvm-ffi",
            Generation::Unknown => "unknown",
        }
    }

    /// A description naming the TVM releases.
    pub fn describe(self) -> &'static str {
        match self {
            Generation::LegacyTvmValue => "legacy TVMValue packed-function ABI (TVM ≤ 0.20)",
            Generation::TvmFfi => "tvm-ffi ABI (TVM ≥ 0.21)",
            Generation::Unknown => "unknown (no ABI-specific symbols or includes found)",
        }
    }
}

/// The conclusion and what it rests on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Abi {
    /// The generation.
    pub generation: Generation,
    /// What showed it (`symbol __tvm_ffi_main in relax_mlp_c.so`, …).
    pub evidence: Vec<String>,
}

/// Collects evidence from symbols, C text and blob layouts.
#[derive(Clone, Debug, Default)]
pub struct AbiScan {
    ffi: Vec<String>,
    legacy: Vec<String>,
}

/// Whether a symbol name is tvm-ffi specific.
pub fn is_ffi_symbol(name: &str) -> bool {
    name.contains("__tvm_ffi_") || name.trim_start_matches('_').starts_with("TVMFFI")
}

/// Whether a symbol name is specific to the legacy ABI.
pub fn is_legacy_symbol(name: &str) -> bool {
    let t = name.trim_start_matches('_');
    name.contains("__tvm_module_ctx")
        || name.contains("__tvm_dev_mblob")
        || name.contains("__tvm_main__")
        || t.starts_with("TVMAPISetLastError")
        || t == "TVMFuncCall"
}

impl AbiScan {
    fn push(list: &mut Vec<String>, what: String) {
        if list.len() < MAX_EVIDENCE && !list.contains(&what) {
            list.push(what);
        }
    }

    /// Looks at symbol names (defined or not) of an object in `place`.
    pub fn symbols<'a>(&mut self, place: &str, names: impl IntoIterator<Item = &'a str>) {
        for n in names {
            if is_ffi_symbol(n) {
                Self::push(&mut self.ffi, format!("symbol {n} in {place}"));
            } else if is_legacy_symbol(n) {
                Self::push(&mut self.legacy, format!("symbol {n} in {place}"));
            }
        }
    }

    /// Looks at C source text in `place`.
    pub fn c_text(&mut self, place: &str, text: &str) {
        for line in text.lines() {
            let l = line.trim_start();
            if l.starts_with("#include") {
                if l.contains("tvm/ffi/") {
                    Self::push(&mut self.ffi, format!("{} in {place}", l.trim_end()));
                } else if l.contains("tvm/runtime/c_runtime_api.h") {
                    Self::push(&mut self.legacy, format!("{} in {place}", l.trim_end()));
                }
            }
        }
        for (marker, ffi) in [
            ("TVMFFIAny", true),
            ("__tvm_ffi_", true),
            ("TVMValue", false),
            ("__tvm_module_ctx", false),
            ("TVMAPISetLastError", false),
            ("__tvm_dev_mblob", false),
        ] {
            if text.contains(marker) {
                let list = if ffi { &mut self.ffi } else { &mut self.legacy };
                Self::push(list, format!("{marker} in {place}"));
            }
        }
    }

    /// Records a blob's layout (a tvm-ffi layout implies the tvm-ffi ABI).
    pub fn layout(&mut self, place: &str, layout: Layout) {
        let what = format!("{} blob layout ({}) in {place}", layout.name(), layout.tvm_versions());
        match layout {
            Layout::Legacy => Self::push(&mut self.legacy, what),
            Layout::Ffi021 | Layout::Ffi => Self::push(&mut self.ffi, what),
        }
    }

    /// The conclusion: any tvm-ffi evidence wins (tvm-ffi code still includes
    /// `c_backend_api.h`), then legacy evidence, else unknown.
    pub fn finish(self) -> Abi {
        if !self.ffi.is_empty() {
            Abi { generation: Generation::TvmFfi, evidence: self.ffi }
        } else if !self.legacy.is_empty() {
            Abi { generation: Generation::LegacyTvmValue, evidence: self.legacy }
        } else {
            Abi { generation: Generation::Unknown, evidence: Vec::new() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffi_wins() {
        let mut s = AbiScan::default();
        s.c_text(
            "a.c",
            "#include \"tvm/runtime/c_backend_api.h\"\n#include \"tvm/ffi/c_api.h\"\nint32_t __tvm_ffi_f(void*);",
        );
        s.symbols("x.so", ["TVMBackendAllocWorkspace"]);
        let abi = s.finish();
        assert_eq!(abi.generation, Generation::TvmFfi);
        assert!(abi.evidence[0].contains("tvm/ffi/c_api.h"));
    }

    #[test]
    fn legacy_symbols() {
        let mut s = AbiScan::default();
        s.symbols("x.so", ["__TVMAPISetLastError", "__tvm_dev_mblob", "memcpy"]);
        assert_eq!(s.finish().generation, Generation::LegacyTvmValue);
        assert_eq!(AbiScan::default().finish().generation, Generation::Unknown);
        assert!(is_ffi_symbol("mylib___tvm_ffi__library_ctx"));
        assert!(is_ffi_symbol("TVMFFIErrorSetRaisedFromCStrParts"));
        assert!(!is_ffi_symbol("TVMBackendAllocWorkspace"));
    }
}
