//! Tokens of C source: identifiers, numbers, string literals (contents dropped) and
//! punctuation, with their byte spans; preprocessor lines are read for `#include` and for
//! `#ifdef __cplusplus` regions, which are skipped.

use crate::model::Include;

/// A token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    Ident(String),
    Number(String),
    Str,
    Punct(char),
}

/// The tokens of `text` with their byte spans; `#include`s go to `includes`.
pub(super) fn tokenize(text: &str, includes: &mut Vec<Include>) -> (Vec<Tok>, Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut spans = Vec::new();
    let mut i = 0;
    let mut at_line_start = true;
    // Stack of conditional regions: true = active.
    let mut cond: Vec<(bool, bool)> = Vec::new(); // (active, is_cplusplus)
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' && at_line_start {
            i = directive(b, i, &mut cond, includes);
            continue;
        }
        at_line_start = false;
        // Comments.
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = text[i + 2..].find("*/").map(|q| i + 2 + q + 2).unwrap_or(b.len());
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            i = text[i..].find('\n').map(|q| i + q).unwrap_or(b.len());
            continue;
        }
        let is_active = active(&cond);
        let start_tok = i;
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            if is_active {
                toks.push(Tok::Str);
                spans.push((start_tok, i.min(b.len())));
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if is_active {
                toks.push(Tok::Ident(text[s..i].to_string()));
                spans.push((s, i));
            }
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let s = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || ((b[i] == b'+' || b[i] == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P')))
            {
                i += 1;
            }
            if is_active {
                toks.push(Tok::Number(text[s..i].to_string()));
                spans.push((s, i));
            }
            continue;
        }
        // Any other byte (multi-byte UTF-8 included) is punctuation.
        let ch = text[i..].chars().next().unwrap_or('?');
        i += ch.len_utf8().max(1);
        if is_active {
            toks.push(Tok::Punct(ch));
            spans.push((start_tok, i.min(b.len())));
        }
    }
    (toks, spans)
}

/// Whether every open conditional region is active (a `#ifdef __cplusplus` region is not).
fn active(cond: &[(bool, bool)]) -> bool {
    cond.iter().all(|(a, _)| *a)
}

/// Reads the preprocessor directive at `start` (with line continuations): opens or closes a
/// conditional region on `cond` (active, is `__cplusplus`), records an active `#include`, and
/// returns where the line ends.
fn directive(b: &[u8], start: usize, cond: &mut Vec<(bool, bool)>, includes: &mut Vec<Include>) -> usize {
    let mut i = start;
    while i < b.len() && b[i] != b'\n' {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
            i += 1;
        }
        i += 1;
    }
    let line = String::from_utf8_lossy(&b[start..i.min(b.len())]);
    let d = line.trim_start_matches('#').trim();
    let (word, rest) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
    let rest = rest.trim();
    match word {
        "ifdef" => cond.push((rest != "__cplusplus", rest == "__cplusplus")),
        "if" | "ifndef" => cond.push((true, false)),
        "else" => {
            if let Some(top) = cond.last_mut() {
                if top.1 {
                    top.0 = !top.0;
                }
            }
        }
        "endif" => {
            cond.pop();
        }
        "include" if active(cond) => {
            let r = rest.trim();
            let (angled, inner) = if let Some(x) = r.strip_prefix('<') {
                (true, x.split('>').next().unwrap_or(""))
            } else if let Some(x) = r.strip_prefix('"') {
                (false, x.split('"').next().unwrap_or(""))
            } else {
                (false, r)
            };
            includes.push(Include { path: inner.to_string(), angled });
        }
        _ => {}
    }
    i
}

pub(super) fn is_open(t: &Tok) -> bool {
    matches!(t, Tok::Punct('(' | '[' | '{'))
}
pub(super) fn is_close(t: &Tok) -> bool {
    matches!(t, Tok::Punct(')' | ']' | '}'))
}

/// Index just past the bracket group that starts at `i` (which must be an opener).
pub(super) fn skip_group(toks: &[Tok], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < toks.len() {
        if is_open(&toks[j]) {
            depth += 1;
        } else if is_close(&toks[j]) {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return j + 1;
            }
        }
        j += 1;
    }
    toks.len()
}

pub(super) fn text_of(toks: &[Tok]) -> String {
    let mut s = String::new();
    for t in toks {
        let piece = match t {
            Tok::Ident(x) | Tok::Number(x) => x.as_str(),
            Tok::Str => "\"…\"",
            Tok::Punct(c) => {
                s.push(*c);
                continue;
            }
        };
        if s.chars().last().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            s.push(' ');
        }
        s.push_str(piece);
    }
    s
}

/// Parses a C integer literal as C reads it: decimal, `0x` hex or `0` octal, with an optional
/// `u`/`U` and `l`/`L`/`ll`/`LL` suffix in either order. `None` when malformed or larger than
/// `u64`. The one integer reader of the C scanners (here and the blob arrays of `devc.c`).
pub fn parse_c_int(s: &str) -> Option<u64> {
    let digits = s.trim_end_matches(['u', 'U', 'l', 'L']);
    let suffix = &s[digits.len()..];
    let unsigned = suffix.chars().filter(|c| matches!(c, 'u' | 'U')).count();
    let long = suffix.trim_matches(['u', 'U']);
    if unsigned > 1 || !matches!(long, "" | "l" | "L" | "ll" | "LL") || suffix.len() != unsigned + long.len() {
        return None;
    }
    let (radix, body) = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => (16, hex),
        None if digits.len() > 1 && digits.starts_with('0') => (8, &digits[1..]),
        None => (10, digits),
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(body, radix).ok()
}
