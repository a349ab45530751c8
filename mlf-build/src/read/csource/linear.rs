//! C index expressions as linear forms of loop variables: `Σ aₖ·vₖ + c` from integer literals,
//! loop variables, locals standing for an expression (substituted), `+`, `-`, products with a
//! constant side, `int32_t`/`int64_t` casts and parentheses. Anything else (division,
//! remainder, shifts, a product of two variables, an unknown name) is no linear form. Nesting is
//! limited to [`MAX_DEPTH`](super::interval::MAX_DEPTH) and the work to
//! [`MAX_STEPS`](super::interval::MAX_STEPS); the arithmetic is checked.

use std::collections::BTreeMap;

use super::interval::{Binding, MAX_DEPTH, MAX_STEPS};
use super::tokens::{Tok, parse_c_int};

/// A linear form: coefficients by variable, and the constant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Linear {
    pub(super) coeffs: BTreeMap<String, i64>,
    pub(super) constant: i64,
}

/// `toks[start..end]` as a linear form of the names `lookup` binds to loop variables.
pub(super) fn linear(
    toks: &[Tok],
    start: usize,
    end: usize,
    lookup: &dyn Fn(&str) -> Option<Binding>,
) -> Option<Linear> {
    let mut p = Parser { toks, lookup, steps: 0, depth: 0 };
    p.whole(start, end)
}

/// Whether the loop variables `loops` (name, largest value) map one to one onto the values of
/// `form`: each variable has a coefficient, and sorted by size each coefficient is larger than
/// the most the smaller terms can span, so two iterations never give the same value.
pub(super) fn one_to_one(form: &Linear, loops: &[(String, i64)]) -> bool {
    if form.coeffs.keys().any(|v| !loops.iter().any(|l| &l.0 == v)) {
        return false;
    }
    let mut terms = Vec::new();
    for (v, hi) in loops {
        let a = form.coeffs.get(v).copied().unwrap_or(0).checked_abs();
        match a {
            Some(0) | None if *hi > 0 => return false,
            Some(a) if *hi > 0 => terms.push((a, *hi)),
            _ => {}
        }
    }
    terms.sort_unstable();
    let mut span = 0i64;
    for (a, hi) in terms {
        if a <= span {
            return false;
        }
        let Some(s) = a.checked_mul(hi).and_then(|t| t.checked_add(span)) else { return false };
        span = s;
    }
    true
}

struct Parser<'a> {
    toks: &'a [Tok],
    lookup: &'a dyn Fn(&str) -> Option<Binding>,
    steps: usize,
    depth: usize,
}

fn add(a: Linear, b: Linear, sign: i64) -> Option<Linear> {
    let mut out = a;
    for (v, c) in b.coeffs {
        let e = out.coeffs.entry(v).or_insert(0);
        *e = e.checked_add(c.checked_mul(sign)?)?;
    }
    out.constant = out.constant.checked_add(b.constant.checked_mul(sign)?)?;
    Some(out)
}

fn scale(a: Linear, k: i64) -> Option<Linear> {
    let mut out = Linear { coeffs: BTreeMap::new(), constant: a.constant.checked_mul(k)? };
    for (v, c) in a.coeffs {
        out.coeffs.insert(v, c.checked_mul(k)?);
    }
    Some(out)
}

impl Parser<'_> {
    fn whole(&mut self, start: usize, end: usize) -> Option<Linear> {
        self.depth += 1;
        if self.depth > MAX_DEPTH || start >= end || end > self.toks.len() {
            return None;
        }
        let mut pos = start;
        let r = self.sum(&mut pos, end)?;
        self.depth -= 1;
        (pos == end).then_some(r)
    }

    fn punct(&mut self, pos: usize, end: usize) -> Option<char> {
        self.steps += 1;
        match self.toks.get(pos) {
            Some(Tok::Punct(c)) if pos < end && self.steps <= MAX_STEPS => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self, pos: &mut usize, end: usize) -> Option<Linear> {
        let mut acc = self.product(pos, end)?;
        while let Some(op @ ('+' | '-')) = self.punct(*pos, end) {
            if matches!(self.punct(*pos + 1, end), Some('=' | '+' | '-')) {
                return None;
            }
            *pos += 1;
            let b = self.product(pos, end)?;
            acc = add(acc, b, if op == '+' { 1 } else { -1 })?;
        }
        Some(acc)
    }

    fn product(&mut self, pos: &mut usize, end: usize) -> Option<Linear> {
        let mut acc = self.factor(pos, end)?;
        while self.punct(*pos, end) == Some('*') {
            *pos += 1;
            let b = self.factor(pos, end)?;
            acc = match (acc.coeffs.is_empty(), b.coeffs.is_empty()) {
                (true, _) => scale(b, acc.constant)?,
                (_, true) => scale(acc, b.constant)?,
                _ => return None,
            };
        }
        // Division, remainder, shifts and comparisons are not linear.
        match self.punct(*pos, end) {
            Some('/' | '%' | '<' | '>' | '&' | '|' | '^' | '?') => None,
            _ => Some(acc),
        }
    }

    fn factor(&mut self, pos: &mut usize, end: usize) -> Option<Linear> {
        self.steps += 1;
        if *pos >= end || self.steps > MAX_STEPS {
            return None;
        }
        match self.toks.get(*pos)?.clone() {
            Tok::Number(n) => {
                *pos += 1;
                Some(Linear { coeffs: BTreeMap::new(), constant: i64::try_from(parse_c_int(&n)?).ok()? })
            }
            Tok::Ident(name) => {
                *pos += 1;
                match (self.lookup)(&name)? {
                    Binding::Var(_) => Some(Linear { coeffs: BTreeMap::from([(name, 1)]), constant: 0 }),
                    Binding::Expr(s, e) => self.whole(s, e),
                    // A name narrowed by a guard is not a whole loop range: no linear form.
                    Binding::Between(..) => None,
                }
            }
            Tok::Punct('(') => {
                let close = super::tokens::skip_group(self.toks, *pos);
                if close > end || self.toks.get(close - 1) != Some(&Tok::Punct(')')) {
                    return None;
                }
                let is_type = |t: &str| {
                    t.ends_with("_t") || matches!(t, "int" | "char" | "short" | "long" | "unsigned" | "signed")
                };
                if let (Some(Tok::Ident(ty)), true) = (self.toks.get(*pos + 1), close == *pos + 3) {
                    if !is_type(ty) {
                        // `(i)`: a parenthesised name.
                        *pos += 1;
                        let r = self.factor(pos, end)?;
                        *pos = close;
                        return Some(r);
                    }
                    // A cast that keeps the value: `(int32_t)x`, `(int64_t)x`.
                    if !matches!(ty.as_str(), "int32_t" | "int64_t" | "int") {
                        return None;
                    }
                    *pos = close;
                    self.depth += 1;
                    let r = if self.depth > MAX_DEPTH { None } else { self.factor(pos, end) };
                    self.depth -= 1;
                    return r;
                }
                let r = self.whole(*pos + 1, close - 1)?;
                *pos = close;
                Some(r)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(expr: &str, vars: &[(&str, i64)], locals: &[(&str, &str)]) -> Option<Linear> {
        crate::read::csource::interval::with_expression(expr, vars, locals, |toks, end, lookup| {
            linear(toks, 0, end, lookup)
        })
    }

    fn loops(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, e)| (n.to_string(), e - 1)).collect()
    }

    #[test]
    fn tvm_indices_are_one_to_one() {
        let v = [("i", 49), ("j", 10)];
        let f = form("c", &v, &[("c", "((i * 10) + j)")]).unwrap();
        assert_eq!((f.coeffs.get("i"), f.coeffs.get("j"), f.constant), (Some(&10), Some(&1), 0));
        assert!(one_to_one(&f, &loops(&v)));
        let f = form("((((i * 320) + (j * 64)) + k) - 384)", &[("i", 25), ("j", 5), ("k", 64)], &[]).unwrap();
        assert!(one_to_one(&f, &loops(&[("i", 25), ("j", 5), ("k", 64)])));
        assert!(one_to_one(&form("(int32_t)(2 * i)", &[("i", 8)], &[]).unwrap(), &loops(&[("i", 8)])));
        assert!(one_to_one(&form("((c))", &[("i", 8)], &[("c", "(i)")]).unwrap(), &loops(&[("i", 8)])));
    }

    #[test]
    fn gives_no_form_or_no_proof_in_doubt() {
        let v = [("i", 2), ("j", 2), ("k", 2)];
        // i + j + 5k spans 8 values over 8 iterations, but i + j repeats.
        assert!(!one_to_one(&form("i + j + k * 5", &v, &[]).unwrap(), &loops(&v)));
        assert!(!one_to_one(&form("i * 2 + j", &v, &[]).unwrap(), &loops(&v)), "k unused");
        assert!(!one_to_one(&form("i + j", &v[..2], &[]).unwrap(), &loops(&v[..2])));
        for bad in
            ["i * j", "i / 2", "i % 2", "i << 1", "(uint8_t)i", "x + 1", "f(i)", "i < 2 ? i : 0", "i +", "(i", "i += 1"]
        {
            assert_eq!(form(bad, &v, &[]), None, "{bad}");
        }
        assert_eq!(form("9223372036854775807 * 2 + i", &v, &[]), None);
        let deep = format!("{}i{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(form(&deep, &v, &[]), None);
    }
}
