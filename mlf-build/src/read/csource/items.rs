//! Top-level items of tokenised C: functions (definitions and prototypes) with their
//! parameters, calls and workspace allocations, global variables with their attributes, and the
//! `_lookup_linked_param` table.

use std::collections::BTreeMap;

use super::tokens::{Tok, is_close, is_open, parse_c_int, skip_group, text_of};
use crate::model::{CCall, CFile, CFunction, CGlobal, CItem, CParam};

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

pub(super) fn parse_items(toks: &[Tok], spans: &[(usize, usize)], file: &mut CFile) {
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
                if !closes(toks, i) {
                    // The text ends inside this group: truncated; the reader refuses it.
                    file.unclosed = spans.get(i).map(|s| s.0);
                    return;
                }
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

/// Whether the group opened at `i` is closed before the tokens end.
fn closes(toks: &[Tok], i: usize) -> bool {
    let mut depth = 0usize;
    for t in &toks[i..] {
        if super::tokens::is_open(t) {
            depth += 1;
        } else if super::tokens::is_close(t) {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return true;
            }
        }
    }
    false
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
    let param_uses = super::uses::param_uses(&params, body);
    let mut f = CFunction {
        name,
        ret,
        params,
        is_static,
        defined: true,
        workspace_allocs: Vec::new(),
        calls: Vec::new(),
        param_uses,
        in_place: super::in_place::overwritable(body),
    };
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
                let param_uses = super::uses::param_uses(&params, &[]);
                file.functions.push(CFunction {
                    name,
                    ret,
                    params,
                    is_static,
                    defined: false,
                    workspace_allocs: Vec::new(),
                    calls: Vec::new(),
                    param_uses,
                    in_place: Vec::new(),
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
