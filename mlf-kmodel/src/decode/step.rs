//! Telling kmodel versions apart, and the decoded step of either runnable version.

use crate::error::{KmodelError, Part};

use super::{v3, v4};

/// A kmodel version, from the first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// V3 (nncase v0.1).
    V3,
    /// V4 (nncase v0.2).
    V4,
    /// V5 (nncase ≥ 1.0): header readable, not runnable.
    V5,
}

/// Identifies a kmodel from its first bytes: the u32 3 is V3 (the Kendryte SDK's
/// `kpu_kmodel_header_t`); the bytes `LDMK` (`'KMDL'` as a little-endian u32) followed by the
/// u32 4 or 5 are V4 or V5. V1 (first u32 1, the pre-nncase `kpu_model_header_t`), old
/// kendryte-model-compiler files (first u32 0x12345678) and anything else are errors that say
/// what the file is.
pub fn identify(bytes: &[u8]) -> Result<Version, KmodelError> {
    let word = |o: usize| bytes.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut head = [0u8; 8];
    let n = bytes.len().min(8);
    head[..n].copy_from_slice(&bytes[..n]);
    if bytes.starts_with(b"LDMK") {
        return match word(4) {
            Some(4) => Ok(Version::V4),
            Some(5) => Ok(Version::V5),
            Some(version) => Err(KmodelError::UnsupportedVersion { version }),
            None => Err(KmodelError::Truncated {
                part: Part::Header,
                offset: 4,
                needed: 4,
                available: bytes.len().saturating_sub(4) as u64,
            }),
        };
    }
    match word(0) {
        Some(3) => Ok(Version::V3),
        Some(1) => Err(KmodelError::LegacyV1),
        Some(0x1234_5678) => Err(KmodelError::ModelCompilerBin),
        _ => Err(KmodelError::UnknownFormat { head }),
    }
}

/// One decoded layer (V3) or node (V4).
///
/// `Empty` is the all-zero value (the explicit `u8` tag 0, no payload), so a table of empty
/// steps in a `static` needs no initialised data (`.bss`).
#[derive(Clone, Copy, Debug)]
#[repr(C, u8)]
pub enum Step<'a> {
    /// Not filled.
    Empty = 0,
    /// A V3 layer.
    V3(v3::Layer<'a>),
    /// A V4 node.
    V4(v4::Node<'a>),
}
