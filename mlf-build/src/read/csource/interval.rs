//! Exact bounds of C index expressions: integer literals, loop variables (`[0, N-1]`), locals
//! that stand for an expression (`int32_t cse_var_1 = (…);`, substituted), `+ - * / % << >>`,
//! integer casts and parentheses.
//!
//! A bound is only given when it is *attained*: every variable is used once (so the variables
//! of two operands are independent and each operand reaches its extremes whatever the other
//! does), division, remainder and shifts take non-negative constants and non-negative operands,
//! and a remainder needs an operand that takes every value of its interval (`dense`). Anything
//! else gives no bound. The arithmetic is checked; nesting (parentheses and substitutions) is
//! limited to [`MAX_DEPTH`] and the work per expression to [`MAX_STEPS`], so hostile C cannot
//! overflow, overflow the stack or take long.

use super::tokens::{Tok, parse_c_int};

/// Deepest nesting of parentheses and substituted locals followed.
pub(super) const MAX_DEPTH: usize = 48;
/// Most tokens read for one expression, substitutions included.
pub(super) const MAX_STEPS: usize = 20_000;

/// The values an expression takes: every value in `lo..=hi` when `dense`, else at least `lo`
/// and `hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Range {
    /// The smallest value, attained.
    pub lo: i64,
    /// The largest value, attained.
    pub hi: i64,
    /// Every value between them is taken too.
    pub dense: bool,
}

impl Range {
    fn point(v: i64) -> Range {
        Range { lo: v, hi: v, dense: true }
    }
    fn constant(&self) -> Option<i64> {
        (self.lo == self.hi).then_some(self.lo)
    }
}

/// What a name in an expression stands for.
pub(super) enum Binding {
    /// A loop variable taking `0..=hi`.
    Var(i64),
    /// A local standing for the expression in tokens `start..end`.
    Expr(usize, usize),
    /// A name taking values in `lo..=hi` only (where a guard holds: [`guards`](super::guards)).
    Between(i64, i64),
}

/// The exact range of `toks[start..end]` (the whole of it must be one expression), or `None`.
pub(super) fn bound(toks: &[Tok], start: usize, end: usize, lookup: &dyn Fn(&str) -> Option<Binding>) -> Option<Range> {
    let mut e = Eval { toks, lookup, used: Vec::new(), steps: 0, depth: 0, hull: false };
    e.whole(start, end)
}

/// Bounds that hold for every value `toks[start..end]` takes, not necessarily attained: a
/// variable may be used more than once, and a remainder by `c` of a non-negative operand lies in
/// `0..c` (for holding accesses to a pool's size, where an over-estimate is safe).
pub(super) fn hull(toks: &[Tok], start: usize, end: usize, lookup: &dyn Fn(&str) -> Option<Binding>) -> Option<Range> {
    let mut e = Eval { toks, lookup, used: Vec::new(), steps: 0, depth: 0, hull: true };
    e.whole(start, end)
}

struct Eval<'a> {
    toks: &'a [Tok],
    lookup: &'a dyn Fn(&str) -> Option<Binding>,
    used: Vec<String>,
    steps: usize,
    depth: usize,
    /// Bounds that hold, not necessarily attained ([`hull`]).
    hull: bool,
}

impl Eval<'_> {
    /// `toks[start..end]` as one expression.
    fn whole(&mut self, start: usize, end: usize) -> Option<Range> {
        self.depth += 1;
        if self.depth > MAX_DEPTH || end > self.toks.len() || start >= end {
            return None;
        }
        let mut pos = start;
        let r = self.and(&mut pos, end)?;
        self.depth -= 1;
        (pos == end).then_some(r)
    }

    fn peek(&mut self, pos: usize, end: usize) -> Option<&Tok> {
        self.steps += 1;
        if pos < end && self.steps <= MAX_STEPS { self.toks.get(pos) } else { None }
    }

    fn punct_at(&mut self, pos: usize, end: usize) -> Option<char> {
        match self.peek(pos, end) {
            Some(Tok::Punct(c)) => Some(*c),
            _ => None,
        }
    }

    /// `a & c` (hull only): `0..=min(a, c)` for a non-negative `a` and constant `c`.
    fn and(&mut self, pos: &mut usize, end: usize) -> Option<Range> {
        let mut acc = self.shift(pos, end)?;
        while self.punct_at(*pos, end) == Some('&') && !matches!(self.punct_at(*pos + 1, end), Some('&' | '=')) {
            *pos += 1;
            let b = self.shift(pos, end)?;
            let c = b.constant().filter(|c| self.hull && *c >= 0 && acc.lo >= 0)?;
            acc = Range { lo: 0, hi: acc.hi.min(c), dense: false };
        }
        Some(acc)
    }

    fn shift(&mut self, pos: &mut usize, end: usize) -> Option<Range> {
        let mut acc = self.additive(pos, end)?;
        loop {
            let (a, b) = (self.punct_at(*pos, end), self.punct_at(*pos + 1, end));
            let op = match (a, b) {
                (Some('<'), Some('<')) => '<',
                (Some('>'), Some('>')) => '>',
                _ => return Some(acc),
            };
            *pos += 2;
            let k = self.additive(pos, end)?.constant().filter(|k| (0..63).contains(k))?;
            acc = if op == '<' { mul(acc, Range::point(1i64 << k))? } else { div(acc, 1i64 << k)? };
        }
    }

    fn additive(&mut self, pos: &mut usize, end: usize) -> Option<Range> {
        let mut acc = self.term(pos, end)?;
        loop {
            let op = self.punct_at(*pos, end);
            if !matches!(op, Some('+' | '-')) || matches!(self.punct_at(*pos + 1, end), Some('=' | '+' | '-')) {
                return Some(acc);
            }
            *pos += 1;
            let b = self.term(pos, end)?;
            let dense = acc.dense && b.dense;
            acc = if op == Some('+') {
                Range { lo: acc.lo.checked_add(b.lo)?, hi: acc.hi.checked_add(b.hi)?, dense }
            } else {
                Range { lo: acc.lo.checked_sub(b.hi)?, hi: acc.hi.checked_sub(b.lo)?, dense }
            };
        }
    }

    fn term(&mut self, pos: &mut usize, end: usize) -> Option<Range> {
        let mut acc = self.primary(pos, end)?;
        loop {
            let op = self.punct_at(*pos, end);
            if !matches!(op, Some('*' | '/' | '%')) || self.punct_at(*pos + 1, end) == Some('=') {
                return Some(acc);
            }
            *pos += 1;
            let b = self.primary(pos, end)?;
            acc = match op {
                Some('*') => mul(acc, b)?,
                Some('/') => div(acc, b.constant()?)?,
                _ if self.hull => {
                    let c = b.constant().filter(|c| *c > 0 && acc.lo >= 0)?;
                    Range { lo: 0, hi: acc.hi.min(c - 1), dense: false }
                }
                _ => rem(acc, b.constant()?)?,
            };
        }
    }

    fn primary(&mut self, pos: &mut usize, end: usize) -> Option<Range> {
        match self.peek(*pos, end)?.clone() {
            Tok::Number(n) => {
                *pos += 1;
                Some(Range::point(i64::try_from(parse_c_int(&n)?).ok()?))
            }
            Tok::Ident(name) => {
                *pos += 1;
                self.name(&name)
            }
            Tok::Punct('(') => {
                let close = self.closing(*pos, end)?;
                if let (Some(Tok::Ident(ty)), true) = (self.toks.get(*pos + 1), close == *pos + 2) {
                    if is_type_name(ty) {
                        // A cast: `(int32_t)x`.
                        let limit = cast_limit(ty)?;
                        *pos = close + 1;
                        self.depth += 1;
                        if self.depth > MAX_DEPTH {
                            return None;
                        }
                        let r = self.primary(pos, end)?;
                        self.depth -= 1;
                        return (r.lo >= -limit - 1 && r.hi <= limit).then_some(r);
                    }
                }
                let r = self.whole(*pos + 1, close)?;
                *pos = close + 1;
                Some(r)
            }
            _ => None,
        }
    }

    /// The `)` matching the `(` at `open`, before `end`.
    fn closing(&mut self, open: usize, end: usize) -> Option<usize> {
        let mut depth = 0usize;
        for k in open..end {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return None;
            }
            match self.toks.get(k)? {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn name(&mut self, name: &str) -> Option<Range> {
        match (self.lookup)(name)? {
            Binding::Var(hi) => {
                if (!self.hull && self.used.iter().any(|u| u == name)) || hi < 0 {
                    return None;
                }
                self.used.push(name.to_string());
                Some(Range { lo: 0, hi, dense: true })
            }
            Binding::Expr(s, e) => self.whole(s, e),
            Binding::Between(lo, hi) => {
                if (!self.hull && self.used.iter().any(|u| u == name)) || lo > hi {
                    return None;
                }
                self.used.push(name.to_string());
                Some(Range { lo, hi, dense: true })
            }
        }
    }
}

/// Whether `name` names a C type (so `(name)` is a cast).
fn is_type_name(name: &str) -> bool {
    name.ends_with("_t")
        || matches!(name, "int" | "char" | "short" | "long" | "unsigned" | "signed" | "float" | "double")
}

/// The largest value of an integer type a cast may keep values of unchanged.
fn cast_limit(ty: &str) -> Option<i64> {
    match ty {
        "int32_t" | "int" => Some(i32::MAX as i64),
        "int64_t" => Some(i64::MAX - 1),
        _ => None,
    }
}

fn mul(a: Range, b: Range) -> Option<Range> {
    let corners = [a.lo.checked_mul(b.lo)?, a.lo.checked_mul(b.hi)?, a.hi.checked_mul(b.lo)?, a.hi.checked_mul(b.hi)?];
    let dense = match (a.constant(), b.constant()) {
        (Some(c), _) => b.dense && (-1..=1).contains(&c),
        (_, Some(c)) => a.dense && (-1..=1).contains(&c),
        _ => false,
    };
    let dense = dense || (a.constant().is_some() && b.constant().is_some());
    Some(Range { lo: *corners.iter().min()?, hi: *corners.iter().max()?, dense })
}

fn div(a: Range, c: i64) -> Option<Range> {
    (c > 0 && a.lo >= 0).then(|| Range { lo: a.lo / c, hi: a.hi / c, dense: a.dense })
}

fn rem(a: Range, c: i64) -> Option<Range> {
    if c <= 0 || a.lo < 0 || !a.dense {
        return None;
    }
    if a.lo / c == a.hi / c {
        return Some(Range { lo: a.lo % c, hi: a.hi % c, dense: true });
    }
    let span = a.hi.checked_sub(a.lo)?;
    Some(Range { lo: 0, hi: c - 1, dense: span >= c - 1 })
}

/// Tests of the expression readers: `f` applied to `expr`'s tokens (`0..end`) with loop
/// variables `vars` (name, extent) and locals `locals` (name, expression), the locals given
/// after the expression in one token list.
#[cfg(test)]
pub(super) fn with_expression<R>(
    expr: &str,
    vars: &[(&str, i64)],
    locals: &[(&str, &str)],
    f: impl FnOnce(&[Tok], usize, &dyn Fn(&str) -> Option<Binding>) -> R,
) -> R {
    let mut text = format!("{expr} ;");
    for (_, e) in locals {
        text.push_str(&format!(" {e} ;"));
    }
    let (toks, _) = super::tokens::tokenize(&text, &mut Vec::new());
    let semis: Vec<usize> = (0..toks.len()).filter(|&k| toks[k] == Tok::Punct(';')).collect();
    let lookup = |n: &str| -> Option<Binding> {
        if let Some(&(_, extent)) = vars.iter().find(|(v, _)| *v == n) {
            return Some(Binding::Var(extent - 1));
        }
        let k = locals.iter().position(|(l, _)| *l == n)?;
        Some(Binding::Expr(semis[k] + 1, semis[k + 1]))
    };
    f(&toks, semis[0], &lookup)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound of `expr` with loop variables `vars` (name, extent) and locals `locals`.
    fn eval(expr: &str, vars: &[(&str, i64)], locals: &[(&str, &str)]) -> Option<(i64, i64)> {
        with_expression(expr, vars, locals, |toks, end, lookup| bound(toks, 0, end, lookup)).map(|r| (r.lo, r.hi))
    }

    #[test]
    fn bounds_tvm_index_expressions() {
        let v = [("i", 125), ("j", 64), ("k", 5)];
        assert_eq!(eval("((i * 64) + j)", &v, &[]), Some((0, 7999)));
        assert_eq!(eval("(((i * 10) + j) - 41)", &v, &[]), Some((-41, 1262)));
        assert_eq!(eval("c", &v, &[("c", "((i * 64) + j)")]), Some((0, 7999)));
        assert_eq!(eval("(((i / 5) * 24) + ((i % 5) * 2))", &v, &[]), None, "i twice");
        assert_eq!(eval("((k % 5) * 2)", &v, &[]), Some((0, 8)));
        assert_eq!(eval("(0)", &v, &[]), Some((0, 0)));
        assert_eq!(eval("((int32_t)j << 2) + (i >> 1)", &v, &[]), Some((0, 252 + 62)));
        assert_eq!(eval("0x10 + 010", &v, &[]), Some((24, 24)));
    }

    #[test]
    fn gives_no_bound_it_cannot_attain() {
        let v = [("i", 10), ("j", 4)];
        assert_eq!(eval("(i * 2) % 2", &v, &[]), None, "a remainder of values with gaps");
        assert_eq!(eval("i + i", &v, &[]), None);
        assert_eq!(eval("c + i", &v, &[("c", "i * 2")]), None);
        assert_eq!(eval("i / j", &v, &[]), None);
        assert_eq!(eval("(i - 20) / 2", &v, &[]), None, "C divides negatives toward zero");
        assert_eq!(eval("x + 1", &v, &[]), None, "unknown name");
        assert_eq!(eval("i < 3 ? i : 0", &v, &[]), None);
        assert_eq!(eval("f(i)", &v, &[]), None);
        assert_eq!(eval("(uint8_t)i", &v, &[]), None);
        assert_eq!(eval("i +", &v, &[]), None);
        assert_eq!(eval("(i", &v, &[]), None);
        assert_eq!(eval("i)", &v, &[]), None);
        assert_eq!(eval("i += 1", &v, &[]), None);
        assert_eq!(eval("1 << 64", &v, &[]), None);
        assert_eq!(eval("1.5", &v, &[]), None);
    }

    #[test]
    fn hostile_expressions_neither_panic_nor_overflow_nor_hang() {
        let v = [("i", i64::MAX)];
        assert_eq!(eval("9223372036854775807 + 1", &v, &[]), None);
        assert_eq!(eval("18446744073709551615", &v, &[]), None);
        assert_eq!(eval("99999999999999999999999999", &v, &[]), None);
        assert_eq!(eval("i * 2", &v, &[]), None);
        assert_eq!(eval("0 - 9223372036854775807 - 2", &v, &[]), None);
        assert_eq!(eval("(int32_t)(4294967296)", &v, &[]), None);
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(eval(&deep, &v, &[]), None);
        let casts = format!("{}i", "(int32_t)".repeat(100_000));
        assert_eq!(eval(&casts, &[("i", 4)], &[]), None);
        assert_eq!(eval("(int32_t)(int64_t)i", &[("i", 4)], &[]), Some((0, 3)));
        let ok = format!("{}1{}", "(".repeat(20), ")".repeat(20));
        assert_eq!(eval(&ok, &v, &[]), Some((1, 1)));
        let long = vec!["1"; 50_000].join(" + ");
        assert_eq!(eval(&long, &v, &[]), None, "past the step budget");
        // Locals doubling at each level: 2^60 expansions unless the work is bounded.
        let names: Vec<String> = (0..61).map(|k| format!("c{k}")).collect();
        let exprs: Vec<String> =
            (0..61).map(|k| if k == 0 { "1".into() } else { format!("c{} + c{}", k - 1, k - 1) }).collect();
        let locals: Vec<(&str, &str)> = names.iter().zip(&exprs).map(|(n, e)| (n.as_str(), e.as_str())).collect();
        assert_eq!(eval("c60", &v, &locals), None);
        // A local standing for itself.
        assert_eq!(eval("c", &v, &[("c", "c + 1")]), None);
    }
}
