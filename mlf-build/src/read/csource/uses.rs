//! How a function uses its pointer parameters: the element type each is declared with
//! (`float* p0`), and the element types it is read and written through, following the aliases
//! TVM prints for untyped parameters (`void* T_cast = arg1;`) to the casts of every access
//! (`((int8_t*)T_cast)[i] = …`). This is how the C tells an output's dtype when nothing else
//! records it: the 2021 AOT main passes `void*` pointers to `void*` kernels, and only the
//! kernel's stores say what it writes.
//!
//! One pass over the body's tokens, with brackets matched by a stack: linear, no recursion.

use std::collections::HashMap;

use super::tokens::Tok;
use crate::model::{CParam, CParamUse};

/// The uses of each of `params` in `body`.
pub(super) fn param_uses(params: &[CParam], body: &[Tok]) -> Vec<CParamUse> {
    let mut uses: Vec<CParamUse> = params
        .iter()
        .map(|p| CParamUse { names: vec![p.name.clone()], declared: declared_elem(&p.ty), ..Default::default() })
        .collect();
    let mut index: HashMap<&str, usize> = params.iter().enumerate().map(|(k, p)| (p.name.as_str(), k)).collect();
    let closing = matching_brackets(body);
    for i in 0..body.len() {
        // `NAME = [(T*)] PARAM ;` declares an alias of a parameter.
        if let (Tok::Ident(alias), Some(Tok::Punct('=')), Some(Tok::Punct('*'))) =
            (&body[i], body.get(i + 1), i.checked_sub(1).map(|k| &body[k]))
        {
            let mut k = i + 2;
            if body.get(k) == Some(&Tok::Punct('(')) {
                k = closing.get(k).copied().flatten().map_or(body.len(), |c| c + 1);
            }
            if let (Some(Tok::Ident(target)), Some(Tok::Punct(';'))) = (body.get(k), body.get(k + 1)) {
                if let Some(&p) = index.get(target.as_str()) {
                    uses[p].names.push(alias.clone());
                    index.insert(alias, p);
                }
            }
        }
        // `((T*)NAME)[…]`, then `=` (a store) or anything else (a load).
        if let Some((elem, name, bracket)) = cast_access(body, i) {
            let Some(&p) = index.get(name) else { continue };
            let after = closing.get(bracket).copied().flatten().map_or(body.len(), |c| c + 1);
            let slot =
                if is_assignment(&body[after.min(body.len())..]) { &mut uses[p].stored } else { &mut uses[p].loaded };
            slot.get_or_insert(elem);
        }
    }
    uses
}

/// The element type of a pointer parameter's declared type (`float*` → `float`), unless it is
/// `void*` or not a plain pointer.
fn declared_elem(ty: &str) -> Option<String> {
    let base = ty.strip_suffix('*')?.trim();
    let base = base.strip_prefix("const ").unwrap_or(base).trim();
    (base != "void" && !base.contains('*') && !base.is_empty()).then(|| base.to_string())
}

/// For every opening bracket, the index of its closing bracket.
fn matching_brackets(toks: &[Tok]) -> Vec<Option<usize>> {
    let mut out = vec![None; toks.len()];
    let mut stack = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct('(' | '[' | '{') => stack.push(i),
            Tok::Punct(')' | ']' | '}') => {
                if let Some(open) = stack.pop() {
                    out[open] = Some(i);
                }
            }
            _ => {}
        }
    }
    out
}

/// `( ( T … * ) NAME ) [` starting at `i`: the element type, the name and the index of `[`.
fn cast_access(toks: &[Tok], i: usize) -> Option<(String, &str, usize)> {
    let [Tok::Punct('('), Tok::Punct('('), rest @ ..] = toks.get(i..)? else { return None };
    let star = rest.iter().position(|t| !matches!(t, Tok::Ident(_)))?;
    let elem: Vec<&str> = rest[..star]
        .iter()
        .filter_map(|t| match t {
            Tok::Ident(w) => Some(w.as_str()),
            _ => None,
        })
        .filter(|w| *w != "const" && *w != "volatile")
        .collect();
    match rest.get(star..star + 5)? {
        [Tok::Punct('*'), Tok::Punct(')'), Tok::Ident(name), Tok::Punct(')'), Tok::Punct('[')] if !elem.is_empty() => {
            Some((elem.join(" "), name.as_str(), i + 2 + star + 4))
        }
        _ => None,
    }
}

/// Whether the tokens start with an assignment operator (`=`, `+=`, `<<=`, …, not `==`).
fn is_assignment(toks: &[Tok]) -> bool {
    match toks {
        [Tok::Punct('='), Tok::Punct('='), ..] => false,
        [Tok::Punct('='), ..] => true,
        [Tok::Punct('+' | '-' | '*' | '/' | '%' | '&' | '|' | '^'), Tok::Punct('='), ..] => true,
        [Tok::Punct('<'), Tok::Punct('<'), Tok::Punct('='), ..]
        | [Tok::Punct('>'), Tok::Punct('>'), Tok::Punct('='), ..] => true,
        _ => false,
    }
}
