//! Tensor element types, parsed from TVM's dtype strings (`float32`, `int8`, `uint8x4`, …) and
//! from DLPack `DLDataType` triples.

use std::fmt;

use crate::error::{Error, Result};

/// DLPack type code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DTypeCode {
    /// Signed integer (`kDLInt` = 0).
    Int,
    /// Unsigned integer (`kDLUInt` = 1).
    UInt,
    /// IEEE float (`kDLFloat` = 2).
    Float,
    /// Opaque handle (`kDLOpaqueHandle` = 3).
    Handle,
    /// bfloat16 (`kDLBfloat` = 4).
    BFloat,
    /// Boolean, one byte per element holding 0 or 1 (`kDLBool` = 6; TVM ≥ 0.2x's `bool`).
    Bool,
    /// Another code, kept as is.
    Other(u8),
}

impl DTypeCode {
    /// The numeric DLPack code.
    pub fn code(self) -> u8 {
        match self {
            DTypeCode::Int => 0,
            DTypeCode::UInt => 1,
            DTypeCode::Float => 2,
            DTypeCode::Handle => 3,
            DTypeCode::BFloat => 4,
            DTypeCode::Bool => 6,
            DTypeCode::Other(c) => c,
        }
    }

    /// From a numeric DLPack code.
    pub fn from_code(c: u8) -> Self {
        match c {
            0 => DTypeCode::Int,
            1 => DTypeCode::UInt,
            2 => DTypeCode::Float,
            3 => DTypeCode::Handle,
            4 => DTypeCode::BFloat,
            6 => DTypeCode::Bool,
            c => DTypeCode::Other(c),
        }
    }
}

/// A tensor element type (`DLDataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    /// Type code.
    pub code: DTypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

impl DType {
    /// `float32`.
    pub const F32: DType = DType { code: DTypeCode::Float, bits: 32, lanes: 1 };
    /// `int8`.
    pub const I8: DType = DType { code: DTypeCode::Int, bits: 8, lanes: 1 };
    /// `uint8`.
    pub const U8: DType = DType { code: DTypeCode::UInt, bits: 8, lanes: 1 };
    /// `int32`.
    pub const I32: DType = DType { code: DTypeCode::Int, bits: 32, lanes: 1 };

    /// A scalar type from a DLPack triple.
    pub fn from_dl(code: u8, bits: u8, lanes: u16) -> Self {
        DType { code: DTypeCode::from_code(code), bits, lanes }
    }

    /// Parses a TVM dtype string: `int|uint|float|bfloat` + bits (32 if omitted) + optional
    /// `x<lanes>`; `bool`; `handle`.
    pub fn parse(s: &str) -> Result<DType> {
        let bad = || Error::invalid(format!("unknown dtype {s:?}"));
        match s {
            "bool" => return Ok(DType { code: DTypeCode::UInt, bits: 1, lanes: 1 }),
            "handle" => return Ok(DType { code: DTypeCode::Handle, bits: 64, lanes: 1 }),
            _ => {}
        }
        let (code, rest) = if let Some(r) = s.strip_prefix("uint") {
            (DTypeCode::UInt, r)
        } else if let Some(r) = s.strip_prefix("int") {
            (DTypeCode::Int, r)
        } else if let Some(r) = s.strip_prefix("bfloat") {
            (DTypeCode::BFloat, r)
        } else if let Some(r) = s.strip_prefix("float") {
            (DTypeCode::Float, r)
        } else {
            return Err(bad());
        };
        let (bits, lanes) = match rest.split_once('x') {
            Some((b, l)) => (b, Some(l)),
            None => (rest, None),
        };
        let bits: u8 = if bits.is_empty() { 32 } else { bits.parse().map_err(|_| bad())? };
        let lanes: u16 = match lanes {
            Some(l) => l.parse().map_err(|_| bad())?,
            None => 1,
        };
        if bits == 0 || lanes == 0 {
            return Err(bad());
        }
        Ok(DType { code, bits, lanes })
    }

    /// Bytes per element: `(bits × lanes + 7) / 8`.
    pub fn elem_bytes(self) -> u64 {
        (self.bits as u64 * self.lanes as u64).div_ceil(8)
    }

    /// The Rust scalar type for this dtype, when there is one (`f32`, `i8`, …). DLPack's
    /// one-byte `bool` is `u8` (0 or 1): a byte a kernel writes can never make an invalid Rust
    /// `bool`.
    pub fn rust_type(self) -> Option<&'static str> {
        if self.lanes != 1 {
            return None;
        }
        Some(match (self.code, self.bits) {
            (DTypeCode::Float, 32) => "f32",
            (DTypeCode::Float, 64) => "f64",
            (DTypeCode::Int, 8) => "i8",
            (DTypeCode::Int, 16) => "i16",
            (DTypeCode::Int, 32) => "i32",
            (DTypeCode::Int, 64) => "i64",
            (DTypeCode::UInt, 8) => "u8",
            (DTypeCode::UInt, 16) => "u16",
            (DTypeCode::UInt, 32) => "u32",
            (DTypeCode::UInt, 64) => "u64",
            (DTypeCode::Bool, 8) => "u8",
            _ => return None,
        })
    }

    /// Why mlf's runtime cannot run a tensor of this dtype that the application passes or the
    /// model stores (inputs, outputs, parameters), or `None` when it can: float32/64, int8–64
    /// and uint8–64 scalars, the types a Rust slice can hold.
    pub fn why_not_runnable(self) -> Option<String> {
        if self.rust_type().is_some() {
            return None;
        }
        let scalar = DType { lanes: 1, ..self };
        Some(
            match (self.code, self.bits) {
                _ if self.lanes != 1 && scalar.rust_type().is_some() => format!(
                    "{self} is a vector of {} {scalar} lanes; vector dtypes are not supported (rebuild with \
                 tir.disable_vectorize)",
                    self.lanes
                ),
                _ if self.lanes != 1 => format!("{self} is a vector dtype; vector dtypes are not supported"),
                (DTypeCode::UInt, 1) => {
                    "bool tensors are not supported (no Rust type with TVM's layout of them)".into()
                }
                (DTypeCode::Float, 16) => {
                    "float16 is not supported (half-precision floats have no Rust type here)".into()
                }
                (DTypeCode::BFloat, _) => format!("{self} is not supported (bfloat has no Rust type here)"),
                (DTypeCode::Int | DTypeCode::UInt, b) if !b.is_power_of_two() || b < 8 => {
                    format!("{self} is a {b}-bit integer; sub-byte and odd-width integers are not supported")
                }
                _ => format!("{self} is not supported"),
            } + " (mlf runs float32/64, int8/16/32/64, uint8/16/32/64 and one-byte bool (as u8))",
        )
    }

    /// Whether TVM's graph executor can hold an entry of this dtype in its storage: whole bytes
    /// per element, or 1 and 4 bits (TVM's own rule, `bits × lanes` a multiple of 8 or 1 or 4).
    pub fn storable(self) -> bool {
        let bits = self.bits as u32 * self.lanes as u32;
        bits % 8 == 0 || bits == 1 || bits == 4
    }

    /// The Rust scalar type, or an error naming the dtype.
    pub fn require_rust_type(self) -> Result<&'static str> {
        self.rust_type().ok_or_else(|| {
            Error::new(crate::error::ErrorKind::UnsupportedDtype(format!(
                "{self} (typed inputs and outputs support float32/64, int8/16/32/64, uint8/16/32/64 and one-byte bool (as u8))"
            )))
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.bits, self.lanes) {
            (DTypeCode::UInt, 1, 1) | (DTypeCode::Bool, 8, 1) => return f.write_str("bool"),
            (DTypeCode::Handle, _, 1) => return f.write_str("handle"),
            _ => {}
        }
        let name = match self.code {
            DTypeCode::Int => "int".to_string(),
            DTypeCode::UInt => "uint".to_string(),
            DTypeCode::Float => "float".to_string(),
            DTypeCode::BFloat => "bfloat".to_string(),
            DTypeCode::Bool => "bool".to_string(),
            DTypeCode::Handle => "handle".to_string(),
            DTypeCode::Other(c) => format!("custom{c}_"),
        };
        write!(f, "{name}{}", self.bits)?;
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

impl serde::Serialize for DType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Number of elements of a shape, or `None` on overflow.
pub fn numel(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Bytes of a tensor, or an error on overflow.
pub fn tensor_bytes(dtype: DType, shape: &[u64]) -> Result<u64> {
    numel(shape)
        .and_then(|n| n.checked_mul(dtype.elem_bytes()))
        .ok_or_else(|| Error::invalid(format!("the size of a {dtype} tensor of shape {shape:?} overflows 64 bits")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for s in ["float32", "int8", "uint8", "int64", "float16", "bfloat16", "bool", "int8x4"] {
            assert_eq!(DType::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(DType::parse("int").unwrap(), DType::I32);
        assert!(DType::parse("complex64").is_err());
        assert!(DType::parse("int0").is_err());
        assert_eq!(DType::parse("bool").unwrap().elem_bytes(), 1);
        assert_eq!(DType::parse("int8x4").unwrap().elem_bytes(), 4);
    }
}
