//! The house rules that the layout of the code must keep, checked on the source text:
//!
//! - no import cycles between modules, at every level of every crate checked: inside a folder,
//!   no two of its modules (counting everything below each) use each other, directly or around
//!   a loop, and a folder's own `mod.rs` items are one more member of that loop check;
//! - mlf-build's layers are used in one direction only (see [`LAYERS`]: `model` imports nothing
//!   from `read`, readers nothing from `plan`, `codegen`, `backend` or `build`);
//! - `codegen` touches no file system;
//! - no file over 600 lines and no function over 100 lines outside tests in mlf-build,
//!   mlf-macros and cargo-mlf.
//!
//! Paths are found in `use` trees and in inline `crate::…`, `super::…` and `self::…` paths
//! (comments, string literals and the code inside `quote!` are skipped); `pub use` re-exports
//! are followed to the module
//! that defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside a crate (`["build", "budget"]`; the crate root is empty).
type ModPath = Vec<String>;

/// One source file of a crate.
struct ModFile {
    path: PathBuf,
    /// Source without comments and string contents.
    code: String,
    /// Child modules declared by this file (`mod x;`).
    children: BTreeSet<String>,
}

/// A crate's modules and what each refers to.
struct Crate {
    name: String,
    files: BTreeMap<ModPath, ModFile>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Removes comments and the contents of string and character literals (keeping line breaks).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = text[i + 2..].find("*/").map_or(b.len(), |q| i + 2 + q + 2);
            out.extend(text[i..end].chars().filter(|&c| c == '\n'));
            i = end;
            continue;
        }
        if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && !ident_byte(b, i.wrapping_sub(1))
        {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&b'"') {
                let close = format!("\"{}", "#".repeat(hashes));
                let end = text[j + 1..].find(&close).map_or(b.len(), |q| j + 1 + q + close.len());
                out.push_str("\"\"");
                out.extend(text[i..end].chars().filter(|&c| c == '\n'));
                i = end;
                continue;
            }
        }
        if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            out.extend(text[i..j.min(b.len())].chars().filter(|&c| c == '\n'));
            i = j + 1;
            continue;
        }
        if c == b'\'' {
            // A character literal ('a', '\n', '\u{..}') but not a lifetime ('a).
            let close = if b.get(i + 1) == Some(&b'\\') {
                text[i + 2..].find('\'').map(|q| i + 2 + q)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
            };
            if let Some(end) = close {
                out.push_str("' '");
                i = end + 1;
                continue;
            }
        }
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Removes the bodies of `quote!` invocations (keeping line breaks): their paths belong to the
/// code they generate, not to this crate.
fn without_quoted(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("quote!") {
        let b = rest.as_bytes();
        if ident_byte(b, at.wrapping_sub(1)) {
            out.push_str(&rest[..at + 6]);
            rest = &rest[at + 6..];
            continue;
        }
        let open = at + 6 + rest[at + 6..].len() - rest[at + 6..].trim_start().len();
        let Some(&o) = b.get(open).filter(|c| matches!(c, b'{' | b'(' | b'[')) else {
            out.push_str(&rest[..at + 6]);
            rest = &rest[at + 6..];
            continue;
        };
        let close = match o {
            b'{' => b'}',
            b'(' => b')',
            _ => b']',
        };
        let mut depth = 0usize;
        let mut end = b.len();
        for (j, &c) in b.iter().enumerate().skip(open) {
            if c == o {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    end = j + 1;
                    break;
                }
            }
        }
        out.push_str(&rest[..=open]);
        out.extend(rest[open + 1..end].chars().filter(|&c| c == '\n'));
        out.push(close as char);
        rest = &rest[end.min(rest.len())..];
    }
    out.push_str(rest);
    out
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The module files of the crate whose sources are in `src`, from `lib.rs` or `main.rs`.
fn read_crate(name: &str, src: &Path) -> Crate {
    let mut files = BTreeMap::new();
    let top = if src.join("lib.rs").is_file() { src.join("lib.rs") } else { src.join("main.rs") };
    let mut todo = vec![(Vec::new(), top, src.to_path_buf())];
    while let Some((m, path, dir)) = todo.pop() {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Tests may use anything; the rules are about the code they test.
        let code = without_quoted(&strip(without_tests(&text)));
        let mut children = BTreeSet::new();
        for line in code.lines() {
            let t = line.trim();
            let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub ")).unwrap_or(t);
            if let Some(rest) = t.strip_prefix("mod ") {
                if let Some(child) = rest.strip_suffix(';') {
                    children.insert(child.trim().to_string());
                }
            }
        }
        for c in &children {
            let mut cm = m.clone();
            cm.push(c.clone());
            let (file, cdir) = if dir.join(format!("{c}.rs")).is_file() {
                (dir.join(format!("{c}.rs")), dir.join(c))
            } else {
                (dir.join(c).join("mod.rs"), dir.join(c))
            };
            todo.push((cm, file, cdir));
        }
        files.insert(m, ModFile { path, code, children });
    }
    Crate { name: name.to_string(), files }
}

/// The paths of a `use` tree (`a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`).
fn use_paths(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    fn expand(prefix: &str, t: &str, out: &mut Vec<String>) {
        let t = t.trim();
        if let Some(open) = t.find('{') {
            let head = t[..open].trim_end_matches("::").trim();
            let inner = &t[open + 1..t.rfind('}').unwrap_or(t.len())];
            let base = join(prefix, head);
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&base, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&base, &inner[start..], out);
        } else if !t.is_empty() {
            let t = t.split(" as ").next().unwrap().trim();
            if t == "self" {
                out.push(prefix.to_string());
            } else if t != "*" {
                out.push(join(prefix, t));
            }
        }
    }
    fn join(a: &str, b: &str) -> String {
        match (a.is_empty(), b.is_empty()) {
            (true, _) => b.to_string(),
            (_, true) => a.to_string(),
            _ => format!("{a}::{b}"),
        }
    }
    let mut out = Vec::new();
    expand("", &tree, &mut out);
    out
}

/// `use` statements of a file: (is a `pub use` re-export, path).
fn uses(code: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(p) = find_word(rest, "use") {
        let before = rest[..p].trim_end();
        let public = before.ends_with("pub") || before.ends_with("pub(crate)");
        let after = &rest[p + 3..];
        let Some(end) = after.find(';') else { break };
        for path in use_paths(&after[..end]) {
            out.push((public, path));
        }
        rest = &after[end..];
    }
    out
}

/// The byte offset of `word` as a whole word in `s`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(q) = s[from..].find(word) {
        let at = from + q;
        if !ident_byte(b, at.wrapping_sub(1)) && !ident_byte(b, at + word.len()) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Inline paths starting with `crate::`, `super::` or `self::`.
fn inline_paths(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(q) = code[from..].find(start) {
            let at = from + q;
            from = at + start.len();
            if ident_byte(b, at.wrapping_sub(1)) {
                continue;
            }
            let mut end = at;
            while end < b.len() && (ident_byte(b, end) || (b[end] == b':' && b.get(end + 1) == Some(&b':'))) {
                end += if b[end] == b':' { 2 } else { 1 };
            }
            out.push(code[at..end].trim_end_matches("::").to_string());
        }
    }
    out
}

/// The code without its `use` statements (their paths are read by [`uses`]).
fn without_uses(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(p) = find_word(rest, "use") {
        out.push_str(&rest[..p]);
        match rest[p..].find(';') {
            Some(end) => rest = &rest[p + end + 1..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Inline paths through child module `child` (`child::item`, not `x::child::item`).
fn child_paths(code: &str, child: &str) -> Vec<String> {
    let b = code.as_bytes();
    let needle = format!("{child}::");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(q) = code[from..].find(&needle) {
        let at = from + q;
        from = at + needle.len();
        let before = code[..at].trim_end();
        if ident_byte(b, at.wrapping_sub(1)) || before.ends_with("::") {
            continue;
        }
        out.push(format!("self::{child}"));
    }
    out
}

impl Crate {
    /// Resolves `path` as written in module `m` to the module that defines what it names
    /// (`None`: outside the crate).
    fn resolve(&self, m: &ModPath, path: &str, depth: usize) -> Option<ModPath> {
        let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let (mut cur, mut i): (ModPath, usize) = match segs.first().copied() {
            Some("crate") => (Vec::new(), 1),
            Some("self") => (m.clone(), 1),
            Some("super") => {
                let mut c = m.clone();
                let mut i = 0;
                while segs.get(i) == Some(&"super") {
                    c.pop();
                    i += 1;
                }
                (c, i)
            }
            Some(first) if self.files[m].children.contains(first) => (m.clone(), 0),
            _ => return None,
        };
        while let Some(&s) = segs.get(i) {
            if self.files.get(&cur).is_some_and(|f| f.children.contains(s)) {
                cur.push(s.to_string());
                i += 1;
                continue;
            }
            // An item of `cur`: follow a re-export of it.
            if depth < 8 {
                for (public, target) in uses(&self.files[&cur].code) {
                    if public && target.rsplit("::").next() == Some(s) {
                        return self.resolve(&cur, &target, depth + 1);
                    }
                }
            }
            break;
        }
        Some(cur)
    }

    /// Module → modules it refers to (re-exports excepted: they are followed instead).
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut out = BTreeMap::new();
        for (m, f) in &self.files {
            let mut to = BTreeSet::new();
            let paths = uses(&f.code).into_iter().filter(|(public, _)| !public).map(|(_, p)| p);
            let body = without_uses(&f.code);
            let children = f.children.iter().flat_map(|c| child_paths(&body, c));
            for p in paths.chain(inline_paths(&body)).chain(children) {
                if let Some(t) = self.resolve(m, &p, 0) {
                    if t != *m {
                        to.insert(t);
                    }
                }
            }
            out.insert(m.clone(), to);
        }
        out
    }

    /// Import cycles: for every folder, the loops among its children (each with everything
    /// below it) and its own items.
    fn cycles(&self) -> Vec<String> {
        let edges = self.edges();
        let mut found = Vec::new();
        for (parent, f) in &self.files {
            if f.children.is_empty() {
                continue;
            }
            // Node of a module under `parent`: its child on the way, or `parent` itself.
            let node = |m: &ModPath| -> Option<String> {
                if m.len() < parent.len() || m[..parent.len()] != parent[..] {
                    return None;
                }
                Some(m.get(parent.len()).cloned().unwrap_or_else(|| "(own items)".to_string()))
            };
            let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (from, tos) in &edges {
                let Some(a) = node(from) else { continue };
                for to in tos {
                    if let Some(b) = node(to) {
                        if a != b {
                            g.entry(a.clone()).or_default().insert(b);
                        }
                    }
                }
            }
            for scc in strongly_connected(&g) {
                let at = if parent.is_empty() { "crate root".to_string() } else { parent.join("::") };
                found.push(format!("{}: in {at}: {}", self.name, scc.join(" ↔ ")));
            }
        }
        found
    }
}

/// Strongly connected components with more than one member (Tarjan).
fn strongly_connected(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                if !t.index.contains_key(w.as_str()) {
                    visit(t, w);
                    let l = t.low[w.as_str()].min(t.low[v]);
                    t.low.insert(v, l);
                } else if t.on.contains(w.as_str()) {
                    let l = t.index[w.as_str()].min(t.low[v]);
                    t.low.insert(v, l);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t =
        T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The crates checked: (name, source folder).
const CRATES: &[(&str, &str)] = &[
    ("mlf-build", "mlf-build/src"),
    ("mlf-macros", "mlf-macros/src"),
    ("cargo-mlf", "cargo-mlf/src"),
    ("mlf-runtime", "mlf-runtime/src"),
];

#[test]
fn no_import_cycles() {
    let mut cycles = Vec::new();
    for (name, src) in CRATES {
        cycles.extend(read_crate(name, &root().join(src)).cycles());
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// mlf-build's layers (its top-level modules) and the layers each may use: data flows from
/// the readers into the model description, then to plans, generated code, the executor
/// backends, the build step and the command line. The crate root (the facade) may use all.
const LAYERS: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("support", &["error"]),
    ("model", &["error", "support"]),
    ("read", &["error", "support", "model"]),
    ("plan", &["error", "support", "model"]),
    ("codegen", &["error", "support", "model", "plan"]),
    ("backend", &["error", "support", "model", "read", "plan", "codegen"]),
    ("build", &["error", "support", "model", "read", "plan", "codegen", "backend"]),
    ("cli", &["error", "support", "model", "read", "plan", "codegen", "backend", "build"]),
    ("testing", &["error", "support", "model", "read"]),
];

#[test]
fn mlf_build_layers_are_used_downward() {
    let c = read_crate("mlf-build", &root().join("mlf-build/src"));
    let mut bad = Vec::new();
    for (from, tos) in c.edges() {
        let Some(top) = from.first() else { continue };
        let Some((_, allowed)) = LAYERS.iter().find(|(l, _)| l == top) else {
            bad.push(format!("module {top} is in no layer"));
            continue;
        };
        for to in tos {
            match to.first() {
                None => bad.push(format!("{} uses the crate root", from.join("::"))),
                Some(t) if t == top || allowed.contains(&t.as_str()) => {}
                Some(_) => bad.push(format!("{} uses {}", from.join("::"), to.join("::"))),
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[test]
fn codegen_touches_no_file_system() {
    let c = read_crate("mlf-build", &root().join("mlf-build/src"));
    let mut bad = Vec::new();
    for (m, f) in &c.files {
        if m.first().map(String::as_str) != Some("codegen") {
            continue;
        }
        let words = [
            "std::fs",
            "fs::",
            "File::",
            "std::env",
            "env::var",
            "std::io",
            "std::path",
            "PathBuf",
            "Path::",
            "write_if_changed",
            "Command",
        ];
        for word in words {
            let b = f.code.as_bytes();
            let found = f.code.match_indices(word).any(|(at, _)| !ident_byte(b, at.wrapping_sub(1)));
            if found {
                bad.push(format!("{} mentions {word}", f.path.display()));
            }
        }
    }
    assert!(bad.is_empty(), "codegen must only return code:\n{}", bad.join("\n"));
}

/// The part of a file before its test module.
fn without_tests(text: &str) -> &str {
    match text.find("\n#[cfg(test)]\nmod tests") {
        Some(p) => &text[..p],
        None => text,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_file_over_600_lines_and_no_function_over_100() {
    let mut bad = Vec::new();
    for src in ["mlf-build/src", "mlf-macros/src", "cargo-mlf/src"] {
        let mut files = Vec::new();
        rust_files(&root().join(src), &mut files);
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = without_tests(&text);
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            let n = code.lines().count();
            if n > 600 {
                bad.push(format!("{rel}: {n} lines"));
            }
            let lines: Vec<&str> = code.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let t = line.trim_start();
                let indent = &line[..line.len() - t.len()];
                let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "const fn ", "pub const fn "]
                    .iter()
                    .any(|p| t.starts_with(p));
                if !is_fn || line.trim_end().ends_with(';') {
                    continue;
                }
                let close = format!("{indent}}}");
                if let Some(len) = lines[i + 1..].iter().position(|l| *l == close) {
                    if len + 2 > 100 {
                        let after_fn = &t[t.find("fn ").map_or(0, |p| p + 3)..];
                        let name = after_fn.split(['(', '<']).next().unwrap_or(after_fn);
                        bad.push(format!("{rel}:{}: {name} is {} lines", i + 1, len + 2));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "too long:\n{}", bad.join("\n"));
}

/// Comments explain themselves: none sends the reader to a document the repository does not
/// hold (the shared design notes and format descriptions live outside it).
#[test]
fn comments_cite_no_outside_document() {
    let mut bad = Vec::new();
    for src in ["mlf-build/src", "mlf-macros/src", "cargo-mlf/src"] {
        let mut files = Vec::new();
        rust_files(&root().join(src), &mut files);
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            for (i, line) in text.lines().enumerate() {
                let comment = line.trim_start();
                if comment.starts_with("//")
                    && ["../shared", "shared/docs", "design.md", "§"].iter().any(|c| comment.contains(c))
                {
                    bad.push(format!("{rel}:{}: {}", i + 1, comment));
                }
            }
        }
    }
    assert!(bad.is_empty(), "comments citing documents outside the repository:\n{}", bad.join("\n"));
}
