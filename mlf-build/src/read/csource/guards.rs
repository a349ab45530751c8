//! Guards of conditional expressions: in `(COND) ? THEN : ELSE`, the values a name takes inside
//! `THEN` are those that make `COND` true. Padding kernels read their input before its start
//! only where a guard excludes it (`(1 <= i) ? p0[i - 41] : 0`), so a bound on an access inside
//! `THEN` may use them.
//!
//! Only what certainly holds is taken: `COND` must be a conjunction (`&&`, any nesting of
//! parentheses) of comparisons of a name with an integer literal (`<`, `<=`, `>`, `>=`, `==`);
//! a conjunct of any other form is ignored (a guard taken from fewer conjuncts is weaker, never
//! wrong), and a condition holding `||`, `?`, `,` or `!` at its top gives no guard. Found in one
//! pass over the tokens; nesting read to [`MAX_DEPTH`](super::interval::MAX_DEPTH).

use super::interval::MAX_DEPTH;
use super::tokens::{Tok, parse_c_int};

/// What a guard says about one name inside its `THEN` tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Guard {
    /// `THEN` spans tokens `start..end`.
    pub start: usize,
    pub end: usize,
    /// The name.
    pub name: String,
    /// Its smallest and largest value there, where the condition says.
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

/// Every guard in `toks`, ordered by where its `THEN` starts (nested guards after the guards
/// that hold them).
pub(super) fn guards(toks: &[Tok]) -> Vec<Guard> {
    // Open parentheses and ternaries, innermost last: `Paren(at)` or `Ternary(at of '?')`.
    enum Open {
        Paren(usize),
        Ternary(usize),
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut open_of: Vec<Option<usize>> = vec![None; toks.len()];
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct('(' | '[' | '{') => stack.push(Open::Paren(i)),
            Tok::Punct(')' | ']' | '}') => {
                // Ternaries left open inside a group end with it.
                while let Some(Open::Ternary(_)) = stack.last() {
                    stack.pop();
                }
                if let Some(Open::Paren(o)) = stack.pop() {
                    open_of[i] = Some(o);
                }
            }
            Tok::Punct('?') => stack.push(Open::Ternary(i)),
            Tok::Punct(':') => {
                if let Some(Open::Ternary(q)) = stack.last() {
                    let q = *q;
                    stack.pop();
                    // The condition: the group that closes just before `?`.
                    let Some(open) = q.checked_sub(1).and_then(|c| open_of[c]) else { continue };
                    let mut facts = Vec::new();
                    if conjuncts(toks, open, q, 0, &mut facts) {
                        for (name, lo, hi) in facts {
                            out.push(Guard { start: q + 1, end: i, name, lo, hi });
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|g| g.start);
    out
}

/// Reads `toks[start..end]` as a conjunction, pushing what each comparison says; false when the
/// expression is not one (then nothing of it may be used).
fn conjuncts(
    toks: &[Tok],
    start: usize,
    end: usize,
    depth: usize,
    out: &mut Vec<(String, Option<i64>, Option<i64>)>,
) -> bool {
    if depth > MAX_DEPTH || start >= end {
        return false;
    }
    let (start, end) = strip_parens(toks, start, end);
    // Split at top-level `&&`.
    let mut parts = Vec::new();
    let (mut level, mut from, mut k) = (0usize, start, start);
    while k < end {
        match &toks[k] {
            Tok::Punct('(' | '[') => level += 1,
            Tok::Punct(')' | ']') => level = level.saturating_sub(1),
            Tok::Punct('&') if level == 0 && toks.get(k + 1) == Some(&Tok::Punct('&')) => {
                parts.push((from, k));
                from = k + 2;
                k += 1;
            }
            Tok::Punct('|' | '?' | ',' | '!') if level == 0 => return false,
            _ => {}
        }
        k += 1;
    }
    if parts.is_empty() {
        // One comparison (or something else, which says nothing).
        if let Some(f) = comparison(&toks[start..end]) {
            out.push(f);
        }
        return true;
    }
    parts.push((from, end));
    parts.into_iter().all(|(s, e)| conjuncts(toks, s, e, depth + 1, out))
}

/// `toks[start..end]` without parentheses around all of it.
fn strip_parens(toks: &[Tok], mut start: usize, mut end: usize) -> (usize, usize) {
    while end >= start + 2 && toks[start] == Tok::Punct('(') && toks[end - 1] == Tok::Punct(')') {
        // The first `(` must close at the last `)`.
        let mut level = 0usize;
        let mut closes_at_end = false;
        for (k, t) in toks.iter().enumerate().take(end).skip(start) {
            match t {
                Tok::Punct('(') => level += 1,
                Tok::Punct(')') => {
                    level -= 1;
                    if level == 0 {
                        closes_at_end = k == end - 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        if !closes_at_end {
            break;
        }
        start += 1;
        end -= 1;
    }
    (start, end)
}

/// `NAME op K` or `K op NAME` (`K` an integer literal, maybe negated): the name and the bounds
/// it gives.
fn comparison(t: &[Tok]) -> Option<(String, Option<i64>, Option<i64>)> {
    let op_len = |k: usize| match (t.get(k), t.get(k + 1)) {
        (Some(Tok::Punct('<' | '>' | '=' | '!')), Some(Tok::Punct('='))) => 2,
        (Some(Tok::Punct('<' | '>')), _) => 1,
        _ => 0,
    };
    let number = |s: &[Tok]| -> Option<i64> {
        match s {
            [Tok::Number(n)] => i64::try_from(parse_c_int(n)?).ok(),
            [Tok::Punct('-'), Tok::Number(n)] => i64::try_from(parse_c_int(n)?).ok()?.checked_neg(),
            _ => None,
        }
    };
    let (name, op, k, name_first) = match t.first()? {
        Tok::Ident(n) => {
            let l = op_len(1);
            (n.clone(), &t[1..1 + l], number(&t[1 + l..])?, true)
        }
        _ => {
            let at = t.iter().position(|x| matches!(x, Tok::Punct('<' | '>' | '=')))?;
            let l = op_len(at);
            let [Tok::Ident(n)] = &t[at + l..] else { return None };
            (n.clone(), &t[at..at + l], number(&t[..at])?, false)
        }
    };
    // As `name OP k`.
    let op: String = op.iter().map(|x| if let Tok::Punct(c) = x { *c } else { ' ' }).collect();
    let op = match (op.as_str(), name_first) {
        (o, true) => o.to_string(),
        ("<", false) => ">".into(),
        ("<=", false) => ">=".into(),
        (">", false) => "<".into(),
        (">=", false) => "<=".into(),
        (o, false) => o.to_string(),
    };
    Some(match op.as_str() {
        "<" => (name, None, Some(k.checked_sub(1)?)),
        "<=" => (name, None, Some(k)),
        ">" => (name, Some(k.checked_add(1)?), None),
        ">=" => (name, Some(k), None),
        "==" => (name, Some(k), Some(k)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::csource::tokens::tokenize;

    fn of(text: &str) -> Vec<(String, Option<i64>, Option<i64>)> {
        let (toks, _) = tokenize(text, &mut Vec::new());
        guards(&toks).into_iter().map(|g| (g.name, g.lo, g.hi)).collect()
    }

    #[test]
    fn a_padding_guard_bounds_both_loop_variables() {
        let g = of("x = (((((4 <= i) && (i < 53)) && (1 <= j)) && (j < 11)) ? p0[((i * 10) + j) - 41] : 0);");
        assert_eq!(
            g,
            vec![
                ("i".into(), Some(4), None),
                ("i".into(), None, Some(52)),
                ("j".into(), Some(1), None),
                ("j".into(), None, Some(10)),
            ]
        );
    }

    #[test]
    fn a_disjunction_or_negation_gives_no_guard() {
        assert!(of("x = ((1 <= i) || (i < 5)) ? p[i - 1] : 0;").is_empty());
        assert!(of("x = (!(1 <= i)) ? p[i - 1] : 0;").is_empty());
    }

    #[test]
    fn other_conjuncts_are_ignored_and_the_branch_ends_at_its_colon() {
        let (toks, _) = tokenize("x = ((f(i) < 3) && (2 < i)) ? (c ? p[i] : q[i]) : r[i];", &mut Vec::new());
        let g = guards(&toks);
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].name.as_str(), g[0].lo, g[0].hi), ("i", Some(3), None));
        // THEN ends before the outer `:` (the inner ternary's `:` does not end it).
        assert_eq!(toks[g[0].end], Tok::Punct(':'));
        assert_eq!(toks[g[0].end + 1], Tok::Ident("r".into()));
    }
}
