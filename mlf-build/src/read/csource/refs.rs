//! Where a C file's functions mention given names, and where the statements of a function that
//! call other functions begin (to take constant arrays out of the C and stage them call by call).

use std::collections::{BTreeMap, BTreeSet};

use super::tokens::{Tok, tokenize};
use crate::model::CFile;

/// A call inside a function body, as found by [`CFile::call_statements`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The function called.
    pub callee: String,
    /// Byte offset in the file's text where the statement holding the call begins.
    pub statement: usize,
    /// Byte offset in the file's text just after the statement holding the call (after its
    /// `;`, or after the `}` of a block it opens before any `;`).
    pub end: usize,
    /// Identifiers in the call's arguments.
    pub arg_names: BTreeSet<String>,
}

impl CFile {
    /// For each function defined in `text` (this file's text), the names of `names` its
    /// definition mentions (outside comments and string literals).
    pub fn references(&self, text: &str, names: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
        let mut out = BTreeMap::new();
        for item in self.items.iter().filter(|i| i.is_function_definition) {
            let Some(body) = text.get(item.range.clone()) else { continue };
            let (toks, _) = tokenize(body, &mut Vec::new());
            let found: BTreeSet<String> = toks
                .into_iter()
                .filter_map(|t| match t {
                    Tok::Ident(n) if names.contains(&n) => Some(n),
                    _ => None,
                })
                .collect();
            if !found.is_empty() {
                out.insert(item.name.clone(), found);
            }
        }
        out
    }

    /// Every call in the body of the function `func` defined in `text`, in order, with where its
    /// statement begins (after the `;`, `{` or `}` before it).
    pub fn call_statements(&self, text: &str, func: &str) -> Vec<CallSite> {
        let Some(item) = self.items.iter().find(|i| i.is_function_definition && i.name == func) else {
            return Vec::new();
        };
        let Some(def) = text.get(item.range.clone()) else { return Vec::new() };
        let (toks, spans) = tokenize(def, &mut Vec::new());
        let Some(open) = toks.iter().position(|t| *t == Tok::Punct('{')) else { return Vec::new() };
        let mut out = Vec::new();
        let mut statement = spans[open].1;
        let mut k = open + 1;
        while k < toks.len() {
            match &toks[k] {
                Tok::Punct(';' | '{' | '}') => statement = spans[k].1,
                Tok::Ident(callee) if toks.get(k + 1) == Some(&Tok::Punct('(')) && !is_control(callee) => {
                    let end = super::tokens::skip_group(&toks, k + 1);
                    let arg_names = toks[k + 1..end.min(toks.len())]
                        .iter()
                        .filter_map(|t| if let Tok::Ident(n) = t { Some(n.clone()) } else { None })
                        .collect();
                    let stop = statement_end(&toks, end).map_or(def.len(), |t| spans[t].1);
                    out.push(CallSite {
                        callee: callee.clone(),
                        statement: item.range.start + statement,
                        end: item.range.start + stop,
                        arg_names,
                    });
                }
                _ => {}
            }
            k += 1;
        }
        out
    }
}

/// The token that ends the statement continuing at token `from`: its `;`, or the `}` closing a
/// block met first (`if (f(x)) { … }`); `None` when the body ends first.
fn statement_end(toks: &[Tok], from: usize) -> Option<usize> {
    let mut k = from;
    while k < toks.len() {
        match toks[k] {
            Tok::Punct(';') => return Some(k),
            Tok::Punct('{') => return super::tokens::skip_group(toks, k).checked_sub(1),
            Tok::Punct('(' | '[') => k = super::tokens::skip_group(toks, k),
            _ => k += 1,
        }
    }
    None
}

/// Keywords followed by a parenthesis that are not calls.
fn is_control(word: &str) -> bool {
    matches!(word, "if" | "while" | "for" | "switch" | "return" | "sizeof")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str = "static const float w[2] = {1, 2};\nint32_t k(float* a) { return ((float*)w)[0] > a[0]; }\nint32_t main_(float* x) {\n  void* s = TVMBackendAllocWorkspace(1, 0, (uint64_t)8, 0, 8);\n  if (k(x) != 0 ) return -1;\n  if (k2(x, w) != 0 ) return -1;\n  return 0;\n}\n";

    #[test]
    fn finds_references_and_call_statements() {
        let f = CFile::scan(MAIN);
        let names: BTreeSet<String> = ["w".to_string()].into();
        let refs = f.references(MAIN, &names);
        assert_eq!(refs.keys().collect::<Vec<_>>(), vec!["k", "main_"]);
        let calls = f.call_statements(MAIN, "main_");
        let callees: Vec<&str> = calls.iter().map(|c| c.callee.as_str()).collect();
        assert_eq!(callees, vec!["TVMBackendAllocWorkspace", "k", "k2"]);
        assert!(MAIN[calls[1].statement..].trim_start().starts_with("if (k(x)"), "{}", &MAIN[calls[1].statement..]);
        assert_eq!(MAIN[calls[1].statement..calls[1].end].trim(), "if (k(x) != 0 ) return -1;");
        let block = "int32_t m(float* x) {\n  if (k(x) != 0) { return -1; }\n  k2(x);\n}\n";
        let calls = CFile::scan(block).call_statements(block, "m");
        assert_eq!(block[calls[0].statement..calls[0].end].trim(), "if (k(x) != 0) { return -1; }");
        assert_eq!(block[calls[1].statement..calls[1].end].trim(), "k2(x);");
        let calls = f.call_statements(MAIN, "main_");
        assert!(calls[2].arg_names.contains("w") && !calls[1].arg_names.contains("w"));
        // A name only in a comment or string is not a reference.
        let text = "int32_t f(void) { /* w */ const char* s = \"w\"; return 0; }\n";
        assert!(CFile::scan(text).references(text, &names).is_empty());
    }
}
