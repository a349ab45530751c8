//! The header of a `.npy` file, read strictly and in one pass: magic, version, length, then the
//! one Python dict literal numpy writes (`{'descr': '<f4', 'fortran_order': False, 'shape':
//! (1, 64), }`). Only that form is accepted — string values without escapes, `True`/`False`,
//! tuples of decimal integers — so a hostile header costs time linear in its length.

use crate::error::{Error, Result};
use crate::support::dtype::{DType, DTypeCode};

/// Longest header read (numpy's own headers are a few hundred bytes).
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Most dimensions in a shape.
const MAX_DIMS: usize = 32;

/// What a `.npy` header says.
#[derive(Debug, PartialEq)]
pub struct Header {
    /// The element type.
    pub dtype: DType,
    /// The `descr` text (`<f4`, `|i1`, …), for messages.
    pub descr: String,
    /// Whether the elements are big-endian (`>`).
    pub big_endian: bool,
    /// Whether the array is stored in Fortran order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Where the data starts in the file.
    pub data_start: usize,
}

fn bad(why: impl std::fmt::Display) -> Error {
    Error::invalid(format!("not a valid .npy file: {why}"))
}

/// Reads the header at the start of `data` (a file that starts with `\x93NUMPY`).
pub fn read(data: &[u8]) -> Result<Header> {
    let (len, start) = match data.get(6..8) {
        Some([1, 0]) => (data.get(8..10).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize), 10),
        Some([2 | 3, 0]) => (data.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize), 12),
        Some([major, minor]) => return Err(bad(format!("unknown format version {major}.{minor}"))),
        _ => return Err(bad("truncated header")),
    };
    let len = len.ok_or_else(|| bad("truncated header"))?;
    if len > MAX_HEADER_BYTES {
        return Err(bad(format!("a header of {len} bytes (at most {MAX_HEADER_BYTES} are read)")));
    }
    let end = start + len;
    let text = data.get(start..end).ok_or_else(|| bad("truncated header"))?;
    let text = std::str::from_utf8(text).map_err(|_| bad("the header is not text"))?;
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key {
            "descr" => descr = Some(p.string()?.to_string()),
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(bad(format!("unknown header key {}", crate::error::shown(other)))),
        }
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    if !p.rest_is_blank() {
        return Err(bad("text after the header's dict"));
    }
    let descr = descr.ok_or_else(|| bad("the header has no 'descr'"))?;
    let shape = shape.ok_or_else(|| bad("the header has no 'shape'"))?;
    let (dtype, big_endian) = element_type(&descr)?;
    Ok(Header { dtype, descr, big_endian, fortran_order: fortran.unwrap_or(false), shape, data_start: end })
}

/// The dtype of a `descr` (`<f4`, `|u1`, `>i2`, …) and whether it is big-endian.
fn element_type(descr: &str) -> Result<(DType, bool)> {
    let unknown = || {
        Error::unsupported(format!(
            ".npy element type {} (mlf reads float32/64 and signed or unsigned 8- to 64-bit integers)",
            crate::error::shown(descr)
        ))
    };
    let mut chars = descr.chars();
    let big_endian = match chars.next() {
        Some('<' | '|' | '=') => false,
        Some('>') => true,
        _ => return Err(unknown()),
    };
    let kind = chars.next().ok_or_else(unknown)?;
    let bytes: u8 = chars.as_str().parse().map_err(|_| unknown())?;
    let code = match kind {
        'f' => DTypeCode::Float,
        'i' => DTypeCode::Int,
        'u' => DTypeCode::UInt,
        'b' => DTypeCode::Bool,
        _ => return Err(unknown()),
    };
    let ok = matches!(
        (code, bytes),
        (DTypeCode::Float, 4 | 8) | (DTypeCode::Int | DTypeCode::UInt, 1 | 2 | 4 | 8) | (DTypeCode::Bool, 1)
    );
    if !ok {
        return Err(unknown());
    }
    Ok((DType { code, bits: bytes * 8, lanes: 1 }, big_endian))
}

/// numpy's name of a dtype (`float32`, `int8`, …), for advice.
pub fn numpy_name(dtype: DType) -> String {
    let kind = match dtype.code {
        DTypeCode::Float => "float",
        DTypeCode::Int => "int",
        DTypeCode::UInt => "uint",
        DTypeCode::Bool => return "bool".into(),
        _ => return dtype.to_string(),
    };
    format!("{kind}{}", dtype.bits)
}

/// A cursor over the header text.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn skip_blank(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn rest_is_blank(&mut self) -> bool {
        self.skip_blank();
        self.at == self.s.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_blank();
        let hit = self.s.get(self.at) == Some(&c);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(bad(format!("expected '{}' at byte {} of the header", c as char, self.at)))
        }
    }

    /// A `'…'` or `"…"` string without escapes.
    fn string(&mut self) -> Result<&'a str> {
        self.skip_blank();
        let quote = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(bad(format!("expected a quoted string at byte {} of the header", self.at))),
        };
        let from = self.at + 1;
        let len = self.s[from..].iter().position(|&c| c == quote || c == b'\\');
        match len.map(|n| (n, self.s[from + n])) {
            Some((n, c)) if c == quote => {
                self.at = from + n + 1;
                // The header is UTF-8 and the quotes are ASCII: the slice is on char boundaries.
                std::str::from_utf8(&self.s[from..from + n]).map_err(|_| bad("the header is not text"))
            }
            Some(_) => Err(bad("an escape in a header string")),
            None => Err(bad("an unterminated string in the header")),
        }
    }

    fn word(&mut self) -> &'a [u8] {
        self.skip_blank();
        let from = self.at;
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.at += 1;
        }
        &self.s[from..self.at]
    }

    fn boolean(&mut self) -> Result<bool> {
        match self.word() {
            b"True" => Ok(true),
            b"False" => Ok(false),
            _ => Err(bad("fortran_order must be True or False")),
        }
    }

    /// `(d0, d1, …)` of decimal integers (a Python 2 `L` suffix allowed).
    fn tuple(&mut self) -> Result<Vec<u64>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            let w = self.word();
            let digits = w.strip_suffix(b"L").unwrap_or(w);
            let text = std::str::from_utf8(digits).unwrap_or("");
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(bad(format!("shape dimension {}", crate::error::shown(text))).at("shape"));
            }
            let d = text.parse::<u64>().map_err(|_| bad(format!("shape dimension {text} is too large")).at("shape"))?;
            if dims.len() == MAX_DIMS {
                return Err(bad(format!("a shape of more than {MAX_DIMS} dimensions")).at("shape"));
            }
            dims.push(d);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out
    }

    #[test]
    fn reads_what_numpy_writes() {
        let h = read(&file("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64), }          \n")).unwrap();
        assert_eq!(
            (h.dtype, h.big_endian, h.fortran_order, h.shape.as_slice()),
            (DType::F32, false, false, &[1, 64][..])
        );
        let h = read(&file("{'descr': '|i1', 'fortran_order': True, 'shape': (3,)}\n")).unwrap();
        assert_eq!((h.descr.as_str(), h.fortran_order, h.shape.as_slice()), ("|i1", true, &[3][..]));
        let h = read(&file("{\"shape\": (), \"descr\": \">u2\"}")).unwrap();
        assert!(h.big_endian && h.shape.is_empty());
    }

    #[test]
    fn refuses_what_numpy_does_not_write_in_linear_time() {
        for (header, why) in [
            ("{'descr': '<f2', 'shape': (1,)}", "element type"),
            ("{'descr': '<f4', 'shape': (1, x)}", "shape dimension"),
            ("{'descr': '<f4', 'shape': (99999999999999999999,)}", "too large"),
            ("{'descr': '<f4', 'colour': 'red', 'shape': (1,)}", "unknown header key"),
            ("{'descr': '<f\\4', 'shape': (1,)}", "escape"),
            ("{'descr': '<f4', 'shape': (1,)} x", "text after"),
            ("{'descr': '<f4'}", "no 'shape'"),
        ] {
            let e = read(&file(header)).unwrap_err().to_string();
            assert!(e.contains(why), "{header}: {e}");
        }
        // Deep nesting is not Python here: one level of parentheses, refused at the second.
        let deep = format!("{{'descr': '<f4', 'shape': {}}}", "(".repeat(60_000));
        assert!(read(&file(&deep)).is_err());
    }
}
