//! The body of `@main`: what its final expression's type is, read from the `/* ty=… */`
//! annotations TVM prints after type inference — on the final expression itself, on the
//! binding (`%5 = …;`, `let %x = …;`) a final `%5` names, or on each element of a final tuple —
//! and the `out_dtype`/`dtype` attribute of a final call.
//!
//! One pass over the tokens records every statement (its binding, where its value starts and
//! its outermost annotation); the final expression is then resolved through at most
//! [`MAX_HOPS`] bindings. Linear in the length of the body, with no recursion.

use std::collections::HashMap;

use super::lex::Tok;
use super::types::{self, TensorType};
use crate::error::Result;
use crate::support::dtype::DType;

/// How many bindings (`%7 = %6;`) are followed to find a value's annotation.
const MAX_HOPS: usize = 16;

/// What the body says about the value `@main` returns.
#[derive(Debug, Default)]
pub(super) struct Returned {
    /// Its tensors, flattened, when annotated.
    pub(super) types: Option<Vec<TensorType>>,
    /// Where they were read.
    pub(super) source: String,
    /// The `out_dtype="…"`/`dtype="…"` of the final call (or of the call bound to the final
    /// variable), when it has one.
    pub(super) call_dtype: Option<DType>,
}

/// A statement of the body: `toks[start..end]`, its value from `value`.
struct Stmt<'a> {
    value: usize,
    end: usize,
    /// The variable it binds (`%5`), if it is a binding.
    binds: Option<&'a str>,
    /// Its outermost `ty=` annotation (a comment at the statement's own bracket depth).
    ty: Option<&'a str>,
}

/// Reads the body that opens at `toks[open]` (a `{`).
pub(super) fn returned(toks: &[Tok<'_>], open: usize) -> Result<Returned> {
    let stmts = statements(toks, open + 1);
    let Some(last) = stmts.last() else { return Ok(Returned::default()) };
    let by_name: HashMap<&str, usize> = stmts.iter().enumerate().filter_map(|(k, s)| Some((s.binds?, k))).collect();
    let mut out = Returned { call_dtype: call_dtype(toks, last, &stmts, &by_name), ..Default::default() };
    if let Some(c) = last.ty {
        out.types = types::of_comment(c)?;
        out.source = "the ty= annotation of @main's final expression".into();
        if out.types.is_some() {
            return Ok(out);
        }
    }
    let value: Vec<Tok<'_>> = code(&toks[last.value..last.end]).collect();
    if let [Tok::Word(v)] = value.as_slice() {
        out.types = annotation_of(toks, v, &stmts, &by_name)?;
        out.source = format!("the ty= annotation of {v}, the value @main returns");
    } else if let (Some(Tok::Punct(b'(')), Some(Tok::Punct(b')'))) = (value.first(), value.last()) {
        out.types = tuple_types(toks, last, &stmts, &by_name)?;
        out.source = "the ty= annotations of the elements of the tuple @main returns".into();
    }
    Ok(out)
}

/// The tokens that are not comments.
fn code<'t, 'a>(toks: &'t [Tok<'a>]) -> impl Iterator<Item = Tok<'a>> + 't {
    toks.iter().copied().filter(|t| !matches!(t, Tok::Comment(_)))
}

/// The statements of the body starting at `from`, up to its closing `}` (or the end).
fn statements<'a>(toks: &[Tok<'a>], from: usize) -> Vec<Stmt<'a>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = from;
    let mut ty = None;
    let mut i = from;
    while i < toks.len() {
        let t = toks[i];
        let at_top = depth == 0;
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            if at_top {
                break;
            }
            depth -= 1;
        } else if at_top && t == Tok::Punct(b';') {
            out.push(stmt(toks, start, i, ty.take()));
            start = i + 1;
        } else if let (true, Tok::Comment(c)) = (at_top, t) {
            if c.contains("ty=") {
                ty = Some(c);
            }
        }
        i += 1;
    }
    if code(&toks[start..i]).next().is_some() {
        out.push(stmt(toks, start, i, ty));
    }
    out
}

/// The statement `toks[start..end]`: a binding `%v = value`, `let %v[: T] = value`, or a value.
fn stmt<'a>(toks: &[Tok<'a>], start: usize, end: usize, ty: Option<&'a str>) -> Stmt<'a> {
    let mut k = start;
    let skip = |k: &mut usize| {
        while *k < end && matches!(toks[*k], Tok::Comment(_)) {
            *k += 1;
        }
    };
    skip(&mut k);
    if toks.get(k) == Some(&Tok::Word("let")) {
        k += 1;
        skip(&mut k);
    }
    if let Some(Tok::Word(v)) = toks.get(k).filter(|_| k < end) {
        if v.starts_with('%') {
            // The `=` at the statement's own depth after the variable (past a `: T`).
            let mut depth = 0usize;
            for (j, t) in toks.iter().enumerate().take(end).skip(k + 1) {
                if t.opens() {
                    depth += 1;
                } else if t.closes() {
                    depth = depth.saturating_sub(1);
                } else if depth == 0 && *t == Tok::Punct(b'=') {
                    return Stmt { value: j + 1, end, binds: Some(v), ty };
                }
            }
        }
    }
    Stmt { value: start, end, binds: None, ty }
}

/// The annotation of variable `v`, following bindings of one variable to another (`%7 = %6;`).
fn annotation_of(
    toks: &[Tok<'_>],
    v: &str,
    stmts: &[Stmt<'_>],
    by_name: &HashMap<&str, usize>,
) -> Result<Option<Vec<TensorType>>> {
    let mut v = v.to_string();
    for _ in 0..MAX_HOPS {
        let Some(s) = by_name.get(v.as_str()).map(|&k| &stmts[k]) else { return Ok(None) };
        if let Some(c) = s.ty {
            return types::of_comment(c);
        }
        let value: Vec<Tok<'_>> = code(&toks[s.value..s.end]).collect();
        match value.as_slice() {
            [Tok::Word(next)] if next.starts_with('%') => v = next.to_string(),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// The types of the elements of the final tuple `(a, b, …)`, each from its own annotation or
/// the binding it names; `None` unless every element has one.
fn tuple_types(
    toks: &[Tok<'_>],
    last: &Stmt<'_>,
    stmts: &[Stmt<'_>],
    by_name: &HashMap<&str, usize>,
) -> Result<Option<Vec<TensorType>>> {
    let Some(open) = (last.value..last.end).find(|&k| toks[k] == Tok::Punct(b'(')) else { return Ok(None) };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    let mut ty = None;
    for k in open + 1..last.end {
        let t = toks[k];
        let element_ends = depth == 0 && (t == Tok::Punct(b',') || t.closes());
        if element_ends {
            let value: Vec<Tok<'_>> = code(&toks[start..k]).collect();
            let found = match (ty.take(), value.as_slice()) {
                (Some(c), _) => types::of_comment(c)?,
                (None, [Tok::Word(v)]) => annotation_of(toks, v, stmts, by_name)?,
                (None, []) => Some(Vec::new()),
                _ => None,
            };
            let Some(found) = found else { return Ok(None) };
            out.extend(found);
            if t.closes() {
                return Ok(Some(out));
            }
            start = k + 1;
        } else if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
        } else if let (0, Tok::Comment(c)) = (depth, t) {
            if c.contains("ty=") {
                ty = Some(c);
            }
        }
    }
    Ok(None)
}

/// The `out_dtype="…"` (or `dtype="…"`) attribute of the call the statement's value is, or of
/// the call bound to the variable it names.
fn call_dtype(toks: &[Tok<'_>], s: &Stmt<'_>, stmts: &[Stmt<'_>], by_name: &HashMap<&str, usize>) -> Option<DType> {
    let mut s = s;
    for _ in 0..MAX_HOPS {
        let mut value = (s.value..s.end).filter(|&k| !matches!(toks[k], Tok::Comment(_)));
        let first = value.next()?;
        match (toks[first], value.next().map(|k| toks[k])) {
            (Tok::Word(v), None) if v.starts_with('%') => s = &stmts[*by_name.get(v)?],
            (Tok::Word(_), Some(Tok::Punct(b'('))) => return attribute_dtype(toks, first + 1, s.end),
            _ => return None,
        }
    }
    None
}

/// The dtype of the first `out_dtype="…"` or `dtype="…"` directly inside the call whose
/// argument list opens at `toks[open]`.
fn attribute_dtype(toks: &[Tok<'_>], open: usize, end: usize) -> Option<DType> {
    let mut depth = 0usize;
    for k in open..end {
        let t = toks[k];
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
            if depth == 0 {
                return None;
            }
        } else if depth == 1 && matches!(t, Tok::Word("out_dtype" | "dtype")) {
            if let (Some(Tok::Punct(b'=')), Some(Tok::Str(d))) = (toks.get(k + 1), toks.get(k + 2)) {
                return DType::parse(d).ok();
            }
        }
    }
    None
}
