//! A scanner for TVM-generated C: which functions and globals a file defines (and whether they
//! are `static`), function parameter lists, `TVMBackendAllocWorkspace` sizes per function, the
//! calls each function makes, `#include`s, and the `_lookup_linked_param` table.
//!
//! It is not a C parser. It tokenises (skipping comments, string and character literals, and
//! `#ifdef __cplusplus` regions) and reads top-level items by bracket structure, which is enough
//! for the regular shape of TVM's output. It never fails: unreadable items are skipped.

use std::collections::BTreeMap;

/// A token.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Number(String),
    Str,
    Punct(char),
}

/// An `#include`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// The path as written.
    pub path: String,
    /// `<…>` rather than `"…"`.
    pub angled: bool,
}

/// A function parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CParam {
    /// Its type as written (`float*`, `void*`, `int32_t*`, `TVMValue*`).
    pub ty: String,
    /// Its name.
    pub name: String,
}

/// A call inside a function body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CCall {
    /// The callee.
    pub callee: String,
    /// The arguments, as token text.
    pub args: Vec<String>,
}

/// A function defined or declared at file scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CFunction {
    /// Name.
    pub name: String,
    /// Return type as written (without storage class and `TVM_DLL`).
    pub ret: String,
    /// Parameters (empty for `(void)`).
    pub params: Vec<CParam>,
    /// Declared `static`.
    pub is_static: bool,
    /// True for a definition (with a body), false for a prototype.
    pub defined: bool,
    /// `TVMBackendAllocWorkspace` calls in the body, in order: the byte count when it is a
    /// constant, `None` when it is computed.
    pub workspace_allocs: Vec<Option<u64>>,
    /// Calls in the body, in order.
    pub calls: Vec<CCall>,
}

impl CFunction {
    /// True when the parameter list is TVM's packed-function signature (six parameters:
    /// `args, arg_type_ids/type_code, num_args, out_ret_value, out_ret_tcode, resource_handle`,
    /// or the five-parameter form of 2021-era forward declarations).
    pub fn is_packed(&self) -> bool {
        let n = self.params.len();
        if n != 5 && n != 6 {
            return false;
        }
        let count_ty = self.params[2].ty.replace(' ', "");
        count_ty == "int" || count_ty == "int32_t"
    }

    /// Sum of the constant workspace allocations (an upper bound of its peak), or `None` when
    /// some allocation has a computed size.
    pub fn workspace_upper_bound(&self, align: u64) -> Option<u64> {
        self.workspace_allocs.iter().try_fold(0u64, |acc, a| a.map(|n| acc + n.div_ceil(align) * align))
    }
}

/// A global variable defined or declared at file scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CGlobal {
    /// Name.
    pub name: String,
    /// Declared `static`.
    pub is_static: bool,
    /// Declared `extern` (a declaration, not a definition).
    pub is_extern: bool,
    /// Type text before the name (`const float`, `uint8_t`, `struct global_const_workspace`).
    pub ty: String,
    /// Array length when declared as `name[N]`.
    pub array_len: Option<u64>,
    /// `__attribute__((section("…")))`, if any.
    pub section: Option<String>,
    /// `__attribute__((aligned(N)))`, if any.
    pub aligned: Option<u64>,
    /// Has an initialiser.
    pub initialised: bool,
    /// The initialiser's values when it is a short list of integers (`{1L, 64L}`), else empty.
    pub init_numbers: Vec<u64>,
}

/// A top-level item (function definition or declaration, variable) and its byte range in the
/// source, including attributes written before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CItem {
    /// The declared name.
    pub name: String,
    /// True for a function definition.
    pub is_function_definition: bool,
    /// Byte range in the source text.
    pub range: std::ops::Range<usize>,
}

/// What a C file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CFile {
    /// Top-level items with their source ranges.
    pub items: Vec<CItem>,
    /// `#include`s in order.
    pub includes: Vec<Include>,
    /// Functions (definitions and prototypes) in order.
    pub functions: Vec<CFunction>,
    /// Global variables in order.
    pub globals: Vec<CGlobal>,
    /// `_lookup_linked_param` cases: storage id → `__tvm_param__…` symbol.
    pub linked_params: BTreeMap<u64, String>,
    /// The first line when it is a `// tvm target: …` comment.
    pub target_comment: Option<String>,
}

impl CFile {
    /// Scans C source text.
    pub fn scan(text: &str) -> CFile {
        let mut file = CFile::default();
        if let Some(first) = text.lines().next() {
            if let Some(t) = first.trim().strip_prefix("// tvm target:") {
                file.target_comment = Some(t.trim().to_string());
            }
        }
        let (toks, spans) = tokenize(text, &mut file.includes);
        parse_items(&toks, &spans, &mut file);
        file
    }

    /// The source with the named top-level items removed (definitions and declarations).
    pub fn without_items(&self, text: &str, names: &[&str]) -> String {
        let mut ranges: Vec<std::ops::Range<usize>> =
            self.items.iter().filter(|i| names.contains(&i.name.as_str())).map(|i| i.range.clone()).collect();
        ranges.sort_by_key(|r| r.start);
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for r in ranges {
            if r.start < last || r.end > text.len() {
                continue;
            }
            out.push_str(&text[last..r.start]);
            out.push_str("/* removed by mlf */");
            last = r.end;
        }
        out.push_str(&text[last..]);
        out
    }

    /// A defined (not only declared) function by name.
    pub fn definition(&self, name: &str) -> Option<&CFunction> {
        self.functions.iter().find(|f| f.defined && f.name == name)
    }

    /// Names of externally visible definitions (non-static functions and non-static, non-extern
    /// variables): the symbols this file puts into the link.
    pub fn exported_symbols(&self) -> impl Iterator<Item = &str> {
        let f = self.functions.iter().filter(|f| f.defined && !f.is_static).map(|f| f.name.as_str());
        let g = self.globals.iter().filter(|g| !g.is_static && !g.is_extern).map(|g| g.name.as_str());
        f.chain(g)
    }
}

fn tokenize(text: &str, includes: &mut Vec<Include>) -> (Vec<Tok>, Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut spans = Vec::new();
    let mut i = 0;
    let mut at_line_start = true;
    // Stack of conditional regions: true = active.
    let mut cond: Vec<(bool, bool)> = Vec::new(); // (active, is_cplusplus)
    let active = |cond: &Vec<(bool, bool)>| cond.iter().all(|(a, _)| *a);
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
            // A directive, with line continuations.
            let start = i;
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                i += 1;
            }
            let line = String::from_utf8_lossy(&b[start..i]);
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
                "include" if active(&cond) => {
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

fn is_open(t: &Tok) -> bool {
    matches!(t, Tok::Punct('(' | '[' | '{'))
}
fn is_close(t: &Tok) -> bool {
    matches!(t, Tok::Punct(')' | ']' | '}'))
}

/// Index just past the bracket group that starts at `i` (which must be an opener).
fn skip_group(toks: &[Tok], i: usize) -> usize {
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

fn text_of(toks: &[Tok]) -> String {
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

struct Attrs {
    section: Option<String>,
    aligned: Option<u64>,
}

/// Removes `__attribute__((…))` groups, returning the remaining tokens and what they said.
fn strip_attributes(toks: &[Tok]) -> (Vec<Tok>, Attrs) {
    let mut out = Vec::new();
    let mut attrs = Attrs { section: None, aligned: None };
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == Tok::Ident("__attribute__".into()) && toks.get(i + 1) == Some(&Tok::Punct('(')) {
            let end = skip_group(toks, i + 1);
            let inner = &toks[i + 1..end];
            for (k, t) in inner.iter().enumerate() {
                if *t == Tok::Ident("aligned".into()) {
                    if let Some(Tok::Number(n)) = inner.get(k + 2) {
                        attrs.aligned = parse_c_int(n);
                    }
                }
                if *t == Tok::Ident("section".into()) {
                    attrs.section = Some(String::new());
                }
            }
            i = end;
            continue;
        }
        out.push(toks[i].clone());
        i += 1;
    }
    (out, attrs)
}

fn parse_items(toks: &[Tok], spans: &[(usize, usize)], file: &mut CFile) {
    let mut i = 0;
    let mut item: Vec<Tok> = Vec::new();
    let mut item_start = 0usize;
    let span = |start: usize, end: usize| spans.get(start).map_or(0, |s| s.0)..spans.get(end).map_or(0, |s| s.1);
    while i < toks.len() {
        let t = &toks[i];
        if item.is_empty() {
            item_start = i;
        }
        match t {
            Tok::Punct(';') => {
                let (nf, ng) = (file.functions.len(), file.globals.len());
                finish_declaration(&item, file);
                let added_global = file.globals.len() > ng;
                let added_fn = file.functions.len() > nf;
                if added_global || added_fn {
                    let name = if added_global {
                        file.globals.last().map(|g| g.name.clone())
                    } else {
                        file.functions.last().map(|f| f.name.clone())
                    };
                    if let Some(name) = name {
                        file.items.push(CItem { name, is_function_definition: false, range: span(item_start, i) });
                    }
                }
                item.clear();
                i += 1;
            }
            Tok::Punct('{') => {
                let end = skip_group(toks, i);
                let (clean, _) = strip_attributes(&item);
                let looks_like_function = matches!(clean.last(), Some(Tok::Punct(')')))
                    && !clean.contains(&Tok::Punct('='))
                    && declarator_name(&clean).is_some();
                if looks_like_function {
                    let before = file.functions.len();
                    finish_function(&item, &toks[i + 1..end.saturating_sub(1)], file);
                    if file.functions.len() > before {
                        let name = file.functions[before].name.clone();
                        file.items.push(CItem {
                            name,
                            is_function_definition: true,
                            range: span(item_start, end.saturating_sub(1)),
                        });
                    }
                    item.clear();
                } else {
                    // A struct body or an initialiser: part of the current item.
                    item.extend_from_slice(&toks[i..end]);
                }
                i = end;
            }
            Tok::Punct('}') => {
                // A stray closer (e.g. the end of an `extern "C" {` block): reset.
                item.clear();
                i += 1;
            }
            _ => {
                item.push(t.clone());
                i += 1;
            }
        }
    }
}

/// The name of a function declarator: the identifier right before the first `(` at depth 0.
fn declarator_name(clean: &[Tok]) -> Option<(usize, String)> {
    let p = clean.iter().position(|t| *t == Tok::Punct('('))?;
    match clean.get(p.checked_sub(1)?) {
        Some(Tok::Ident(n)) if !is_keyword(n) => Some((p, n.clone())),
        _ => None,
    }
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "if" | "for"
            | "while"
            | "switch"
            | "return"
            | "sizeof"
            | "case"
            | "else"
            | "do"
            | "void"
            | "int"
            | "char"
            | "float"
            | "double"
            | "unsigned"
            | "signed"
            | "long"
            | "short"
            | "struct"
            | "const"
            | "static"
            | "extern"
            | "typedef"
            | "__attribute__"
            | "TVM_DLL"
            | "default"
            | "goto"
            | "break"
            | "continue"
    )
}

fn type_text(toks: &[Tok]) -> String {
    let filtered: Vec<Tok> = toks
        .iter()
        .filter(|t| !matches!(t, Tok::Ident(x) if x == "static" || x == "extern" || x == "TVM_DLL" || x == "inline"))
        .filter(|t| **t != Tok::Str)
        .cloned()
        .collect();
    text_of(&filtered)
}

fn parse_params(toks: &[Tok]) -> Vec<CParam> {
    let mut params = Vec::new();
    let mut depth = 0;
    let mut cur: Vec<Tok> = Vec::new();
    let mut push = |cur: &mut Vec<Tok>| {
        if cur.is_empty() || (cur.len() == 1 && cur[0] == Tok::Ident("void".into())) {
            cur.clear();
            return;
        }
        let name = match cur.iter().rev().find(|t| matches!(t, Tok::Ident(_))) {
            Some(Tok::Ident(n)) => n.clone(),
            _ => String::new(),
        };
        let pos = cur.iter().rposition(|t| *t == Tok::Ident(name.clone())).unwrap_or(cur.len());
        params.push(CParam { ty: text_of(&cur[..pos]), name });
        cur.clear();
    };
    for t in toks {
        if is_open(t) {
            depth += 1;
        } else if is_close(t) {
            depth -= 1;
        }
        if depth == 0 && *t == Tok::Punct(',') {
            push(&mut cur);
        } else {
            cur.push(t.clone());
        }
    }
    push(&mut cur);
    params
}

fn signature(item: &[Tok]) -> Option<(String, String, Vec<CParam>, bool)> {
    let (clean, _) = strip_attributes(item);
    let (p, name) = declarator_name(&clean)?;
    let end = skip_group(&clean, p);
    let params = parse_params(clean.get(p + 1..end.saturating_sub(1)).unwrap_or(&[]));
    let is_static = clean[..p].iter().any(|t| *t == Tok::Ident("static".into()));
    let ret = type_text(&clean[..p - 1]);
    Some((name, ret, params, is_static))
}

fn finish_function(item: &[Tok], body: &[Tok], file: &mut CFile) {
    let Some((name, ret, params, is_static)) = signature(item) else { return };
    let mut f =
        CFunction { name, ret, params, is_static, defined: true, workspace_allocs: Vec::new(), calls: Vec::new() };
    scan_body(body, &mut f);
    if f.name == "_lookup_linked_param" {
        scan_linked_params(body, &mut file.linked_params);
    }
    file.functions.push(f);
}

fn finish_declaration(item: &[Tok], file: &mut CFile) {
    if item.is_empty() || item[0] == Tok::Ident("typedef".into()) {
        return;
    }
    let (clean, attrs) = strip_attributes(item);
    // A prototype: `… name ( … )` with no `=` before the parenthesis.
    if let Some((p, _)) = declarator_name(&clean) {
        let eq = clean.iter().position(|t| *t == Tok::Punct('='));
        if eq.is_none_or(|e| e > p) && matches!(clean.last(), Some(Tok::Punct(')'))) {
            if let Some((name, ret, params, is_static)) = signature(item) {
                file.functions.push(CFunction {
                    name,
                    ret,
                    params,
                    is_static,
                    defined: false,
                    workspace_allocs: Vec::new(),
                    calls: Vec::new(),
                });
            }
            return;
        }
    }
    // A variable: name = last identifier at depth 0 before `[`, `=` or the end.
    let mut depth = 0;
    let mut name_at = None;
    let mut stop = clean.len();
    for (k, t) in clean.iter().enumerate() {
        if depth == 0 && matches!(t, Tok::Punct('[' | '=')) {
            stop = k;
            break;
        }
        if is_open(t) {
            depth += 1;
        } else if is_close(t) {
            depth -= 1;
        } else if depth == 0 {
            if let Tok::Ident(n) = t {
                if !is_keyword(n) {
                    name_at = Some(k);
                }
            }
        }
    }
    let Some(k) = name_at else { return };
    let Tok::Ident(name) = &clean[k] else { return };
    let array_len = match (clean.get(stop), clean.get(stop + 1)) {
        (Some(Tok::Punct('[')), Some(Tok::Number(n))) => parse_c_int(n),
        _ => None,
    };
    let head = &clean[..k];
    let head_no_body: Vec<Tok> = {
        let mut v = Vec::new();
        let mut j = 0;
        while j < head.len() {
            if head[j] == Tok::Punct('{') {
                j = skip_group(head, j);
                continue;
            }
            v.push(head[j].clone());
            j += 1;
        }
        v
    };
    file.globals.push(CGlobal {
        name: name.clone(),
        is_static: head.iter().any(|t| *t == Tok::Ident("static".into())),
        is_extern: head.iter().any(|t| *t == Tok::Ident("extern".into())),
        ty: type_text(&head_no_body),
        array_len,
        section: attrs.section,
        aligned: attrs.aligned,
        initialised: clean.contains(&Tok::Punct('=')),
        init_numbers: init_numbers(&clean),
    });
}

/// The values of an initialiser `= { 1L, 64L }` made only of integers (at most 64 of them).
fn init_numbers(clean: &[Tok]) -> Vec<u64> {
    let Some(eq) = clean.iter().position(|t| *t == Tok::Punct('=')) else { return Vec::new() };
    let mut out = Vec::new();
    for t in &clean[eq + 1..] {
        match t {
            Tok::Punct('{' | '}' | ',') => {}
            Tok::Number(n) => match parse_c_int(n) {
                Some(v) if out.len() < 64 => out.push(v),
                _ => return Vec::new(),
            },
            _ => return Vec::new(),
        }
    }
    out
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

fn scan_body(body: &[Tok], f: &mut CFunction) {
    let mut k = 0;
    while k + 1 < body.len() {
        if let (Tok::Ident(callee), Tok::Punct('(')) = (&body[k], &body[k + 1]) {
            if !is_keyword(callee)
                && !matches!(k.checked_sub(1).map(|j| &body[j]), Some(Tok::Punct('.')) | Some(Tok::Punct('>')))
            {
                let end = skip_group(body, k + 1);
                let inner = &body[k + 2..end.saturating_sub(1).max(k + 2)];
                let args = split_args(inner);
                if callee == "TVMBackendAllocWorkspace" {
                    let size = args.get(2).and_then(|a| const_size(a));
                    f.workspace_allocs.push(size);
                }
                f.calls.push(CCall { callee: callee.clone(), args: args.iter().map(|a| text_of(a)).collect() });
            }
        }
        k += 1;
    }
}

fn split_args(toks: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        if is_open(t) {
            depth += 1;
        } else if is_close(t) {
            depth -= 1;
        } else if depth == 0 && *t == Tok::Punct(',') {
            out.push(&toks[start..i]);
            start = i + 1;
        }
    }
    if start < toks.len() {
        out.push(&toks[start..]);
    }
    out
}

/// `(uint64_t)1024` or `1024` → 1024.
fn const_size(arg: &[Tok]) -> Option<u64> {
    let rest = if arg.first() == Some(&Tok::Punct('(')) { &arg[skip_group(arg, 0)..] } else { arg };
    match rest {
        [Tok::Number(n)] => parse_c_int(n),
        _ => None,
    }
}

fn scan_linked_params(body: &[Tok], out: &mut BTreeMap<u64, String>) {
    let mut k = 0;
    let mut current: Option<u64> = None;
    while k < body.len() {
        match &body[k] {
            Tok::Ident(w) if w == "case" => {
                current = match body.get(k + 1) {
                    Some(Tok::Number(n)) => parse_c_int(n),
                    _ => None,
                };
            }
            Tok::Ident(w) if w == "default" => current = None,
            Tok::Ident(w) if w.starts_with("__tvm_param__") => {
                if let Some(sid) = current.take() {
                    out.insert(sid, w.clone());
                }
            }
            _ => {}
        }
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"// tvm target: c -keys=cpu
#define TVM_EXPORTS
#include "tvm/runtime/c_runtime_api.h"
#include <math.h>
#ifdef __cplusplus
extern "C" {
#endif
static const float __attribute__((section(".rodata.tvm"), aligned(16))) fused_constant[4] = { 0x1p-1f, 2.0f, 3, 4 };
void* __tvm_module_ctx = NULL;
__attribute__((section(".bss.noinit.tvm"), aligned(16)))
static uint8_t global_workspace[228];
TVM_DLL int32_t tvmgen_default_fused_add(float* p0, float* T_add);
TVM_DLL int32_t tvmgen_default_fused_add(float* p0, float* T_add) {
  void* w = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)1024, 2, 32);
  if (w == NULL) { return -1; }
  for (int32_t i = 0; i < 4; ++i) { T_add[i] = p0[i] + ((float*)fused_constant)[i]; }
  if (TVMBackendFreeWorkspace(1, dev_id, w) != 0) { return -1; }
  return 0;
}
static int32_t helper(void) { return 0; }
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,struct tvmgen_default_outputs* outputs) {return tvmgen_default___tvm_main__(inputs->pixels,outputs->output);
}
#ifdef __cplusplus
}
#endif
"#;

    #[test]
    fn scans_definitions_globals_and_allocs() {
        let f = CFile::scan(SAMPLE);
        assert_eq!(f.target_comment.as_deref(), Some("c -keys=cpu"));
        assert_eq!(f.includes.len(), 2);
        let add = f.definition("tvmgen_default_fused_add").unwrap();
        assert_eq!(add.params.len(), 2);
        assert_eq!(add.params[0].ty, "float*");
        assert_eq!(add.params[1].name, "T_add");
        assert_eq!(add.workspace_allocs, vec![Some(1024)]);
        assert!(!add.is_static);
        assert!(f.definition("helper").unwrap().is_static);
        let run = f.definition("tvmgen_default_run").unwrap();
        assert_eq!(run.calls[0].callee, "tvmgen_default___tvm_main__");
        assert_eq!(run.calls[0].args, vec!["inputs->pixels", "outputs->output"]);
        let exported: Vec<_> = f.exported_symbols().collect();
        assert_eq!(exported, vec!["tvmgen_default_fused_add", "tvmgen_default_run", "__tvm_module_ctx"]);
        let ws = f.globals.iter().find(|g| g.name == "global_workspace").unwrap();
        assert_eq!(ws.array_len, Some(228));
        assert!(ws.is_static);
        assert_eq!(ws.aligned, Some(16));
        let c = f.globals.iter().find(|g| g.name == "fused_constant").unwrap();
        assert_eq!(c.array_len, Some(4));
    }

    #[test]
    fn reads_linked_param_table() {
        let src = "TVM_DLL int32_t _lookup_linked_param(void* args, int* arg_type_ids, int num_args, void* out_ret_value, int* out_ret_tcode, void* resource_handle) {\n switch (((int64_t*) args)[0]) {\n default: out_ret_tcode[0] = 4; return 0;\n case 10: ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p7; out_ret_tcode[0] = 3; return 0;\n case 3: ((uint64_t*)out_ret_value)[0] = (uint64_t) (uintptr_t) __tvm_param__p1; return 0;\n }\n}\n";
        let f = CFile::scan(src);
        assert_eq!(f.linked_params.get(&10).map(String::as_str), Some("__tvm_param__p7"));
        assert_eq!(f.linked_params.get(&3).map(String::as_str), Some("__tvm_param__p1"));
        assert!(f.definition("_lookup_linked_param").unwrap().is_packed());
    }

    #[test]
    fn removes_items_with_their_attributes() {
        let src = "#include <x.h>\n__attribute__((section(\".rodata.tvm\"), ))\nstatic struct global_const_workspace {\n  float a[2] __attribute__((aligned(16)));\n} global_const_workspace = {\n  .a = {1.0f, 2.0f},\n};// of total size 8 bytes\n__attribute__((section(\".bss.noinit.tvm\"), aligned(16)))\nstatic uint8_t global_workspace[32];\nTVM_DLL int32_t tvmgen_default___tvm_main__(float* a, float* b, uint8_t* c, uint8_t* d);\nint32_t tvmgen_default_run(struct tvmgen_default_inputs* i, struct tvmgen_default_outputs* o) {\n  return tvmgen_default___tvm_main__(i->a, o->b, &global_const_workspace, &global_workspace);\n}\n";
        let f = CFile::scan(src);
        let out = f.without_items(src, &["global_const_workspace", "global_workspace", "tvmgen_default_run"]);
        assert!(!out.contains("global_const_workspace ="), "{out}");
        assert!(!out.contains("global_workspace[32]"), "{out}");
        assert!(!out.contains("tvmgen_default_run("), "{out}");
        assert!(!out.contains("section"), "{out}");
        assert!(out.contains("tvmgen_default___tvm_main__(float* a"), "{out}");
        assert!(out.contains("#include <x.h>"));
        // What is left still scans to the main's prototype only.
        let again = CFile::scan(&out);
        assert!(again.globals.is_empty());
        assert_eq!(again.functions.len(), 1);
    }

    #[test]
    fn integers_are_read_as_c_reads_them() {
        for (text, want) in [
            ("0", Some(0)),
            ("10", Some(10)),
            ("010", Some(8)),
            ("0x1F", Some(31)),
            ("0X1f", Some(31)),
            ("255u", Some(255)),
            ("1024UL", Some(1024)),
            ("16ull", Some(16)),
            ("7LU", Some(7)),
            ("0777", Some(511)),
            ("18446744073709551615ULL", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("08", None),
            ("0x", None),
            ("1.5", None),
            ("1e3", None),
            ("+1", None),
            ("1uu", None),
            ("1lul", None),
            ("", None),
        ] {
            assert_eq!(parse_c_int(text), want, "{text}");
        }
        let f = CFile::scan("static const float fused_constant[010];\n");
        assert_eq!(f.globals[0].array_len, Some(8));
    }

    #[test]
    fn never_panics_on_garbage() {
        for s in ["{{{", ")))(", "int f(", "#include", "\"unterminated", "/* open", "static x[", "a b c = { ;", "'"] {
            let _ = CFile::scan(s);
        }
    }
}
