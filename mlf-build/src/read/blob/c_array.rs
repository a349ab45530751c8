//! Finds blob arrays in C source (`devc.c`): `const unsigned char __tvm_dev_mblob[N] = { 0x.., … };`
//! under any of the three symbol names (with an optional `c_symbol_prefix`), and reads their
//! initialiser. Comments and string literals are skipped, so the name inside the system-lib
//! registration call is not mistaken for a definition.

use super::layout::Layout;
use crate::error::{Error, Result};
use crate::read::csource::parse_c_int;

/// A blob array found in C source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CArray {
    /// The symbol (`__tvm_dev_mblob`, `mylib___tvm_ffi__library_bin`, …).
    pub symbol: String,
    /// The layout its name selects.
    pub layout: Layout,
    /// The array's bytes.
    pub bytes: Vec<u8>,
    /// 1-based line of the definition.
    pub line: usize,
}

/// Every blob array defined (with an initialiser) in `text`.
pub fn find_blob_arrays(text: &str) -> Result<Vec<CArray>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            i = skip_line(b, i);
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = skip_block(b, i);
        } else if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let ident = text.get(start..i).unwrap_or("");
            if let Some(layout) = Layout::from_symbol(ident) {
                let line = 1 + b[..start].iter().filter(|&&c| c == b'\n').count();
                if let Some(body) = definition_body(b, i) {
                    let (bytes, end) = read_initialiser(b, body.open, ident, line)?;
                    if let Some(n) = body.declared {
                        if n != bytes.len() as u64 {
                            return Err(Error::mismatch(format!(
                                "declared with {n} elements but the initialiser has {} (line {line})",
                                bytes.len()
                            ))
                            .at(ident));
                        }
                    }
                    out.push(CArray { symbol: ident.to_string(), layout, bytes, line });
                    i = end;
                }
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    Ok(out)
}

fn skip_line(b: &[u8], i: usize) -> usize {
    b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p + 1)
}

fn skip_block(b: &[u8], i: usize) -> usize {
    b[i + 2..].windows(2).position(|w| w == b"*/").map_or(b.len(), |p| i + 2 + p + 2)
}

fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            c if c == q => return j + 1,
            b'\n' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    loop {
        match b.get(i) {
            Some(c) if c.is_ascii_whitespace() => i += 1,
            Some(b'/') if b.get(i + 1) == Some(&b'/') => i = skip_line(b, i),
            Some(b'/') if b.get(i + 1) == Some(&b'*') => i = skip_block(b, i),
            _ => return i,
        }
    }
}

struct Body {
    declared: Option<u64>,
    /// Index just after `{`.
    open: usize,
}

/// After the identifier: `[N] = {` (N optional). `None` when this is not a definition with an
/// initialiser (a declaration `[];`, a use, …).
fn definition_body(b: &[u8], i: usize) -> Option<Body> {
    let mut i = skip_ws(b, i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut declared = None;
    if b.get(i).is_some_and(u8::is_ascii_digit) {
        let (v, next) = number(b, i)?;
        declared = Some(v);
        i = skip_ws(b, next);
    }
    if b.get(i) != Some(&b']') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) != Some(&b'=') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    Some(Body { declared, open: i + 1 })
}

/// The C integer literal starting at `b[i]` ([`parse_c_int`]) and the index after it; `None`
/// when malformed or larger than `u64`.
fn number(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let len = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c == b'.').count();
    let text = std::str::from_utf8(&b[i..i + len]).ok()?;
    Some((parse_c_int(text)?, i + len))
}

fn read_initialiser(b: &[u8], open: usize, symbol: &str, line: usize) -> Result<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = skip_ws(b, open);
    loop {
        if b.get(i) == Some(&b'}') {
            return Ok((out, i + 1));
        }
        let k = out.len();
        let at_line = |i: usize| line + b[open.min(i)..i].iter().filter(|&&c| c == b'\n').count();
        let Some((v, next)) = b.get(i).filter(|c| c.is_ascii_digit()).and_then(|_| number(b, i)) else {
            let what = match b.get(i) {
                None => "the file ends inside the initialiser".to_string(),
                Some(c) => format!("expected a byte value, found {:?}", *c as char),
            };
            return Err(Error::invalid(format!("{what} (line {})", at_line(i))).at(format!("{symbol}[{k}]")));
        };
        if v > 255 {
            return Err(Error::invalid(format!("{v} does not fit in an unsigned char (line {})", at_line(i)))
                .at(format!("{symbol}[{k}]")));
        }
        out.push(v as u8);
        i = skip_ws(b, next);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => {}
            other => {
                let found = other.map_or("the end of the file".to_string(), |c| format!("{:?}", *c as char));
                return Err(Error::invalid(format!(
                    "expected ',' or '}}' after the value, found {found} (line {})",
                    at_line(i)
                ))
                .at(format!("{symbol}[{k}]")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_styles_and_skips_declarations() {
        let text = "TVM_EXPORT extern const unsigned char __tvm_dev_mblob[];\n\
                    const unsigned char __tvm_dev_mblob[4] = {\n  0x1,0x0,0xff,10\n};\n\
                    static int __tvm_dev_mblob_reg_ = Reg(\"__tvm_dev_mblob\", (void*)__tvm_dev_mblob);\n\
                    const unsigned char p___tvm_ffi__library_bin[2] = {\n  0x01, /* c */ 0x02,\n};\n";
        let found = find_blob_arrays(text).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].bytes, vec![1, 0, 255, 10]);
        assert_eq!(found[0].layout, Layout::Legacy);
        assert_eq!(found[0].line, 2);
        assert_eq!(found[1].symbol, "p___tvm_ffi__library_bin");
        assert_eq!(found[1].bytes, vec![1, 2]);
    }

    #[test]
    fn reads_integers_as_c_does() {
        // Octal, hex, decimal and suffixes, like the C scanner's array lengths.
        let found = find_blob_arrays("const unsigned char __tvm_dev_mblob[04] = {010, 0x10, 10u, 0};").unwrap();
        assert_eq!(found[0].bytes, vec![8, 16, 10, 0]);
        let e = find_blob_arrays("const unsigned char __tvm_dev_mblob[] = {1, 09};").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("__tvm_dev_mblob[1]"));
    }

    #[test]
    fn rejects_bad_initialisers() {
        let e = find_blob_arrays("const unsigned char __tvm_dev_mblob[2] = {0x1, 0x100};").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("__tvm_dev_mblob[1]"));
        let e = find_blob_arrays("const unsigned char __tvm_dev_mblob[3] = {0x1, 0x2};").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("__tvm_dev_mblob"));
        let e = find_blob_arrays("const unsigned char __tvm_dev_mblob[] = {0x1, x};").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("__tvm_dev_mblob[1]"));
        let e = find_blob_arrays("const unsigned char __tvm_dev_mblob[] = {0x1, 0x2").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("__tvm_dev_mblob[1]"));
        assert!(find_blob_arrays("// const unsigned char __tvm_dev_mblob[] = {0x1};").unwrap().is_empty());
    }
}
