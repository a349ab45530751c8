//! Blobs inside an MLF's generated code. TVM never puts one there, but if a `devc.c` (or an
//! object with the blob symbol) is present, its modules must not be dropped silently: the MLF
//! reader turns them into blockers that name each module.

use super::layout::{LEGACY_SYMBOL, LIB_KEY};
use super::parse;
use super::payload::ModuleClass;
use super::source::{scan_c, scan_object};
use super::tree::Blob;
use crate::error::{Context, ErrorKind, Result};
use crate::model::Code;

/// A non-host module found in a blob inside generated code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddedModule {
    /// The source or object file (`codegen/host/src/devc.c`).
    pub member: String,
    /// Its type key (`cuda`, `opencl`, …).
    pub type_key: String,
    /// Its payload size.
    pub bytes: u64,
}

fn mentions_blob(data: &[u8]) -> bool {
    [LEGACY_SYMBOL.as_bytes(), b"library_bin"].iter().any(|n| data.windows(n.len()).any(|w| w == *n))
}

/// Every module other than the host library (`_lib`) in a blob carried by the code: C sources
/// holding a `__tvm_dev_mblob`/`…library_bin` array and objects defining the symbol. An error
/// only when such a blob is malformed (named by member and symbol), in a C source or an object
/// alike; objects the `object` crate cannot read are left to the linker.
pub fn device_modules_in_code(code: &Code) -> Result<Vec<EmbeddedModule>> {
    let mut out = Vec::new();
    let mut add = |member: &str, blob: Blob| {
        for m in blob.modules {
            if m.type_key != LIB_KEY {
                out.push(EmbeddedModule { member: member.to_string(), bytes: m.bytes(), type_key: m.type_key });
            }
        }
    };
    for s in &code.sources {
        if !mentions_blob(&s.bytes) {
            continue;
        }
        let Ok(text) = s.bytes.as_str() else { continue };
        for f in scan_c(text).in_member(&s.member)? {
            let sym = f.symbol.clone().unwrap_or_default();
            let blob = parse(&f.bytes, f.layout).in_member(format!("{} ({sym})", s.member))?;
            add(&s.member, blob);
        }
    }
    for o in &code.objects {
        if !mentions_blob(&o.bytes) {
            continue;
        }
        let scan = match scan_object(&o.bytes) {
            Ok(scan) => scan,
            // Not an object the `object` crate reads: left to the linker.
            Err(e) if matches!(e.kind, ErrorKind::UnknownFormat(_)) => continue,
            // A damaged blob symbol: named like a damaged blob in C source, `member (symbol)`.
            Err(mut e) => {
                e.member = Some(match e.member.take() {
                    Some(symbol) => format!("{} ({symbol})", o.member),
                    None => o.member.clone(),
                });
                return Err(e);
            }
        };
        for b in scan.blobs {
            let blob = parse(&b.bytes, b.layout).in_member(format!("{} ({})", o.member, b.symbol))?;
            add(&o.member, blob);
        }
    }
    Ok(out)
}

/// Blocker messages for embedded modules, one or two per file:
/// `codegen/host/src/devc.c carries device modules cuda (1234 bytes), … that cannot run on the
/// CPU target`, and for other kinds `… carries modules … that mlf does not build`.
pub fn blockers(modules: &[EmbeddedModule]) -> Vec<String> {
    let mut members: Vec<&str> = Vec::new();
    for m in modules {
        if !members.contains(&m.member.as_str()) {
            members.push(&m.member);
        }
    }
    let mut out = Vec::new();
    for member in members {
        let (device, other): (Vec<_>, Vec<_>) = modules
            .iter()
            .filter(|m| m.member == member)
            .map(|m| (m.type_key.as_str(), m.bytes))
            .partition(|(key, _)| ModuleClass::of(key) == ModuleClass::Device);
        if !device.is_empty() {
            out.push(device_blocker(member, &device));
        }
        if !other.is_empty() {
            out.push(format!(
                "{member} carries modules {} that mlf does not build (only the host C/LLVM code is compiled)",
                module_list(&other)
            ));
        }
    }
    out
}

/// `cuda (1234 bytes), opencl (56 bytes)`.
fn module_list(modules: &[(&str, u64)]) -> String {
    modules.iter().map(|(key, bytes)| format!("{key} ({bytes} bytes)")).collect::<Vec<_>>().join(", ")
}

/// The blocker for device modules (type key, payload bytes) in `place`: `devc.c carries device
/// modules cuda (1234 bytes) that cannot run on the CPU target`.
pub fn device_blocker(place: &str, modules: &[(&str, u64)]) -> String {
    format!("{place} carries device modules {} that cannot run on the CPU target", module_list(modules))
}
