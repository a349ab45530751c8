//! Relay types as TVM prints them, flattened to the tensors they hold: `Tensor[(1, 3), uint8]`,
//! a scalar dtype (`float32`, a tensor of rank 0), tuples `(T, T)` nested to any depth (with
//! or without a trailing comma). Any other form (`meta[relay.TupleType][0]`, function types,
//! storage types) is not an error: it just gives no tensors.
//!
//! Iterative: nesting is counted, not recursed into, and limited to [`MAX_DEPTH`] levels.

use super::lex::{Tok, lex};
use crate::error::{Error, Result};
use crate::support::dtype::DType;

/// How deeply tuple types may nest.
pub const MAX_DEPTH: usize = 64;

/// A tensor type `Tensor[(d0, d1, …), dtype]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    /// Shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
}

/// The tensors of the type written in `toks` (comments already removed), in order; `None` when
/// it is not a form this reader knows. An error for a tensor type that cannot be run (a dynamic
/// dimension, an unknown dtype) or nesting deeper than [`MAX_DEPTH`].
pub(super) fn flatten(toks: &[Tok<'_>]) -> Result<Option<Vec<TensorType>>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    // Expecting a type (true) or what follows one: `,`, `)` or the end (false).
    let mut want_type = true;
    while i < toks.len() {
        match (want_type, toks[i]) {
            (true, Tok::Punct(b'(')) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Error::invalid(format!("a tuple type nested deeper than {MAX_DEPTH} levels")));
                }
                i += 1;
            }
            // `()`: the empty tuple; `(T,)`: a trailing comma.
            (true, Tok::Punct(b')')) if i > 0 && matches!(toks[i - 1], Tok::Punct(b'(' | b',')) => {
                want_type = false;
            }
            (true, Tok::Word("Tensor")) if toks.get(i + 1) == Some(&Tok::Punct(b'[')) => {
                let Some(close) = close_of(toks, i + 1) else { return Ok(None) };
                let Some(t) = tensor(&toks[i + 2..close])? else { return Ok(None) };
                out.push(t);
                i = close + 1;
                want_type = false;
            }
            (true, Tok::Word(w)) if toks.get(i + 1) != Some(&Tok::Punct(b'[')) => match DType::parse(w) {
                Ok(dtype) => {
                    out.push(TensorType { shape: Vec::new(), dtype });
                    i += 1;
                    want_type = false;
                }
                Err(_) => return Ok(None),
            },
            (false, Tok::Punct(b')')) if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            (false, Tok::Punct(b',')) if depth > 0 => {
                want_type = true;
                i += 1;
            }
            _ => return Ok(None),
        }
    }
    Ok((depth == 0 && !want_type).then_some(out))
}

/// The tensors of the type in a `/* ty=… */` comment, if the comment has one.
pub(super) fn of_comment(comment: &str) -> Result<Option<Vec<TensorType>>> {
    let Some(p) = comment.find("ty=") else { return Ok(None) };
    if p > 0 && !comment.as_bytes()[p - 1].is_ascii_whitespace() {
        return Ok(None);
    }
    let ty = &comment[p + 3..];
    let end = ty.find(" span=").unwrap_or(ty.len());
    flatten(&lex(&ty[..end]))
}

/// The index of the bracket closing the one opened at `open`.
fn close_of(toks: &[Tok<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The inside of `Tensor[…]`: `(dims), dtype`. `None` for another layout.
fn tensor(inner: &[Tok<'_>]) -> Result<Option<TensorType>> {
    let [Tok::Punct(b'('), rest @ ..] = inner else { return Ok(None) };
    let Some(close) = rest.iter().position(|t| *t == Tok::Punct(b')')) else { return Ok(None) };
    let (dims, after) = (&rest[..close], &rest[close + 1..]);
    let [Tok::Punct(b','), Tok::Word(dtype)] = after else { return Ok(None) };
    let mut shape = Vec::new();
    for (k, d) in dims.iter().enumerate() {
        match (k % 2, d) {
            (0, Tok::Word(w)) => shape.push(dimension(w)?),
            (1, Tok::Punct(b',')) => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(TensorType { shape, dtype: DType::parse(dtype)? }))
}

/// A dimension: `3`, `3i64`, `3i32`; `?` or `Any` is dynamic, which no static plan can hold.
fn dimension(w: &str) -> Result<u64> {
    let digits = w.strip_suffix("i64").or_else(|| w.strip_suffix("i32")).unwrap_or(w);
    digits.parse().map_err(|_| {
        Error::unsupported(format!(
            "dimension {w:?} is dynamic or not a number; microcontroller models need static shapes"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(s: &str) -> Option<Vec<(Vec<u64>, String)>> {
        flatten(&lex(s)).unwrap().map(|v| v.into_iter().map(|t| (t.shape, t.dtype.to_string())).collect())
    }

    #[test]
    fn every_printed_form() {
        let t = |s: &[u64], d: &str| (s.to_vec(), d.to_string());
        assert_eq!(types("Tensor[(1, 1, 1, 3), uint8]"), Some(vec![t(&[1, 1, 1, 3], "uint8")]));
        assert_eq!(types("Tensor[(16), float32]"), Some(vec![t(&[16], "float32")]));
        assert_eq!(types("Tensor[(16,), float32]"), Some(vec![t(&[16], "float32")]));
        assert_eq!(types("Tensor[(), int32]"), Some(vec![t(&[], "int32")]));
        assert_eq!(types("Tensor[(1i64, 3i64), int8]"), Some(vec![t(&[1, 3], "int8")]));
        assert_eq!(types("float32"), Some(vec![t(&[], "float32")]));
        assert_eq!(
            types("(Tensor[(1, 4), float32], (Tensor[(2), int8], int32),)"),
            Some(vec![t(&[1, 4], "float32"), t(&[2], "int8"), t(&[], "int32")])
        );
        assert_eq!(types("()"), Some(vec![]));
        assert_eq!(types("meta[relay.TupleType][0]"), None);
        assert_eq!(types("fn (Tensor[(1), int8]) -> Tensor[(1), int8]"), None);
        assert_eq!(types("(Tensor[(1), int8]"), None);
        assert_eq!(types("Tensor[(1), int8])"), None);
        assert!(flatten(&lex("Tensor[(?, 4), float32]")).is_err());
        assert!(flatten(&lex("Tensor[(1), posit8]")).is_err());
    }

    #[test]
    fn comments() {
        let c = of_comment(" ty=Tensor[(1, 10), float32] span=Softmax_1:0:0 ").unwrap().unwrap();
        assert_eq!(c[0].shape, vec![1, 10]);
        assert_eq!(of_comment(" span=Identity:0:0 ").unwrap(), None);
        assert_eq!(of_comment(" xty=float32 ").unwrap(), None);
    }

    #[test]
    fn nesting_is_limited_without_recursion() {
        let deep = format!("{}float32{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(flatten(&lex(&deep)).is_err());
        let ok = format!("{}float32{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(flatten(&lex(&ok)).unwrap().unwrap().len(), 1);
    }
}
