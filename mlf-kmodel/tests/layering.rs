//! The crate's shape, checked: its layers import only the layers below them, no module imports
//! form a cycle, no source file is over 600 lines, no function over 100, and no comment cites a
//! document the repository does not have.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first; `lib.rs` (the facade) may use them all.
const LAYERS: &[&str] =
    &["error", "profile", "types", "reader", "float", "views", "nnil", "kpu", "decode", "check", "exec"];

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `src/kpu/arith.rs` → ["kpu", "arith"]; `mod.rs` names its folder; `lib.rs` is [].
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file without its `#[cfg(test)]` module and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every module path the code names, resolved against the known modules (`crate::`,
/// `super::` and `self::` paths, in `use` lists too).
fn references(own: &[String], code: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let words: Vec<&str> = code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).collect();
    for w in words {
        let mut segs: Vec<&str> = w.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = match segs.first() {
            Some(&"crate") => Vec::new(),
            Some(&"super") => own[..own.len().saturating_sub(1)].to_vec(),
            Some(&"self") => own.to_vec(),
            _ => continue,
        };
        segs.remove(0);
        while segs.first() == Some(&"super") {
            base.pop();
            segs.remove(0);
        }
        // The longest known module the path names.
        let mut best = None;
        let mut p = base.clone();
        for s in segs {
            p.push(s.to_string());
            if known.contains(&p) {
                best = Some(p.clone());
            }
        }
        if let Some(b) = best.or((!base.is_empty()).then_some(base)) {
            if b != own && known.contains(&b) {
                out.insert(b);
            }
        }
    }
    out
}

#[test]
#[cfg_attr(miri, ignore = "a source-text lint with no unsafe code: nothing for Miri to check")]
fn layers_import_only_lower_layers_and_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    let known: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in &files {
        let own = module_path(&src, f);
        if own.is_empty() {
            continue; // lib.rs: the facade
        }
        let refs = references(&own, &code(&std::fs::read_to_string(f).unwrap()), &known);
        let layer = |m: &[String]| LAYERS.iter().position(|l| *l == m[0]).unwrap_or_else(|| panic!("{m:?}: no layer"));
        for r in &refs {
            assert!(!r.is_empty(), "{}: uses the crate root (the facade)", f.display());
            assert!(layer(r) <= layer(&own), "{}: layer {} uses the higher layer {}", f.display(), own[0], r[0]);
        }
        graph.insert(own, refs);
    }
    // Depth-first search for a cycle among the modules.
    fn visit<'g>(
        n: &'g Vec<String>,
        g: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<&'g Vec<String>, u8>,
        stack: &mut Vec<&'g Vec<String>>,
    ) {
        match state.get(n) {
            Some(2) => return,
            Some(1) => panic!("import cycle: {:?} -> {n:?}", stack),
            _ => {}
        }
        state.insert(n, 1);
        stack.push(n);
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, state, stack);
        }
        stack.pop();
        state.insert(n, 2);
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        visit(n, &graph, &mut state, &mut Vec::new());
    }
    assert!(graph.len() > 30, "only {} modules found", graph.len());
}

/// (file, line, name, length) of every function of more than `max` lines.
fn long_functions(file: &Path, max: usize) -> Vec<(usize, String, usize)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "const fn ", "pub const fn "]
            .iter()
            .any(|p| t.starts_with(p));
        if !is_fn || t.ends_with(';') {
            continue;
        }
        let indent = l.len() - t.len();
        let close = " ".repeat(indent) + "}";
        if let Some(end) = lines[i + 1..].iter().position(|x| *x == close) {
            if end + 2 > max {
                out.push((i + 1, t.chars().take(60).collect(), end + 2));
            }
        }
    }
    out
}

#[test]
#[cfg_attr(miri, ignore = "a source-text lint with no unsafe code: nothing for Miri to check")]
fn no_file_over_600_lines_and_no_function_over_100() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for f in sources(&src) {
        let n = std::fs::read_to_string(&f).unwrap().lines().count();
        assert!(n <= 600, "{}: {n} lines", f.display());
        let long = long_functions(&f, 100);
        assert!(long.is_empty(), "{}: functions over 100 lines: {long:?}", f.display());
    }
}

#[test]
#[cfg_attr(miri, ignore = "a source-text lint with no unsafe code: nothing for Miri to check")]
fn comments_cite_only_what_a_reader_can_open() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = sources(&root.join("src"));
    for d in ["tests", "benches", "k210-check/src"] {
        files.extend(sources(&root.join(d)));
    }
    let needle = ["docs", "/kmodel.md"].concat(); // a document outside the repository
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains(&needle), "{} cites {needle}", f.display());
    }
}
