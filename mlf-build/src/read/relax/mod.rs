//! The Relax executor's reader: today's TVM (0.25–0.27, Relax + tvm-ffi) `export_library` output.
//!
//! An export holds the kernels (`lib0.c` or `lib0.o`) and a tvm-ffi blob (`devc.c`/`devc.o`)
//! whose `relax.VMExecutable` module is the bytecode program with the weights in its constant
//! pool. [`exec`] decodes the executable, [`text`] prints it as TVM's `as_text()` does, and
//! [`load`] finds it in a file.

pub mod desc;
pub mod exec;
pub mod lower;
#[cfg(feature = "build")]
pub mod object_scratch;
pub mod text;

use std::path::Path;

use crate::error::{Error, Result};
use crate::read::blob::{self, Payload, source::Scan};
use crate::support::bytes::Bytes;

pub use exec::{Executable, decode};

/// A Relax export as found: the scan of its members, and the executable's payload bytes.
pub struct Found {
    /// What the file holds (members, blob, ABI).
    pub scan: Scan,
    /// The `relax.VMExecutable` payload.
    pub payload: Bytes,
}

/// Finds the Relax executable in a scanned export, if its blob holds one.
pub fn payload_of(scan: &Scan) -> Result<Option<Bytes>> {
    for found in &scan.found {
        let parsed = blob::parse(&found.bytes, found.layout).map_err(|e| e.at(found.place()))?;
        for m in &parsed.modules {
            if let Payload::Relax(r) = &m.decoded {
                return Ok(Some(r.code.clone()));
            }
        }
    }
    Ok(None)
}

/// Why a file holding a Relax executable cannot be built by itself: the decoder's or the
/// lowering's error, or — for a program that lowers — that the export's kernels are needed too
/// (a `devc.c`, `devc.o` or shared object alone; the whole `export_library` tar builds).
pub fn refusal(payload: &Bytes) -> Error {
    match decode(payload.as_slice()).and_then(|ex| lower::lower(&ex)) {
        Err(e) => e,
        Ok(_) => Error::unsupported(BLOB_ALONE).with_help("use `cargo mlf inspect` to see what the program holds"),
    }
}

/// Why a Relax program that lowers cannot be built from this file alone.
pub const BLOB_ALONE: &str = "a Relax program (TVM 0.25–0.27) without its kernels: build the tar that \
                              export_library wrote (its lib0.c or lib0.o and devc.c or devc.o together)";

/// Reads a file (`.tar`, `.tar.gz`, `devc.c`, `devc.o`) and returns its Relax executable.
pub fn load(path: &Path) -> Result<(Found, Executable)> {
    let scan = blob::source::scan(path)?;
    let payload = payload_of(&scan)
        .map_err(|e| e.in_file(path))?
        .ok_or_else(|| Error::missing("a relax.VMExecutable module in the export's blob").in_file(path))?;
    let ex = decode(payload.as_slice()).map_err(|e| e.at("relax.VMExecutable").in_file(path))?;
    Ok((Found { scan, payload }, ex))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> Vec<std::path::PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
        let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
        v.sort();
        v
    }

    #[test]
    fn decoded_programs_equal_tvms_own_text() {
        let all = fixtures();
        assert!(all.len() >= 18, "{} fixtures", all.len());
        for dir in all {
            let (_, ex) = load(&dir.join("model.tar")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let want = std::fs::read_to_string(dir.join("program.txt")).unwrap();
            assert_eq!(text::as_text(&ex), want, "{}", dir.display());
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let (found, _) = load(&fixtures()[0].join("model.tar")).unwrap();
        let p = found.payload.as_slice();
        for cut in (0..p.len()).step_by(7) {
            assert!(decode(&p[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn unknown_versions_are_named() {
        let (found, _) = load(&fixtures()[0].join("model.tar")).unwrap();
        let mut p = found.payload.as_slice().to_vec();
        // The version string follows the magic and its u64 length: "0.14" → "0.99".
        p[8 + 8 + 2] = b'9';
        p[8 + 8 + 3] = b'9';
        let e = decode(&p).unwrap_err().to_string();
        assert!(e.contains("0.99") && e.contains("0.14"), "{e}");
    }
}
