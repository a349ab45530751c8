//! Names: TVM's C sanitising rule and the Rust identifiers mlf derives from raw tensor names.

use crate::error::{Error, Result};

/// TVM's `SanitizeName`: every character that is not `[A-Za-z0-9]` becomes `_`; case is kept.
pub fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// A snake_case Rust field identifier for a raw tensor name (`serving_default_input_1:0` →
/// `serving_default_input_1_0`, `StatefulPartitionedCall` → `stateful_partitioned_call`).
/// Keywords get a trailing `_`; names starting with a digit get a leading `_`.
pub fn field_ident(raw: &str) -> String {
    let s = sanitize(raw);
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1);
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    // Collapse runs of underscores that sanitising produced, but keep a leading one.
    let mut collapsed = String::new();
    for c in out.chars() {
        if c == '_' && collapsed.ends_with('_') && collapsed.len() > 1 {
            continue;
        }
        collapsed.push(c);
    }
    let mut s = collapsed.trim_end_matches('_').to_string();
    if s.is_empty() {
        s = "tensor".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if is_rust_keyword(&s) {
        s.push('_');
    }
    s
}

/// An UPPER_SNAKE constant identifier for a raw tensor name.
pub fn const_ident(raw: &str) -> String {
    field_ident(raw).trim_end_matches('_').to_ascii_uppercase()
}

/// A module identifier (snake_case) for a model name.
pub fn module_ident(raw: &str) -> String {
    field_ident(raw)
}

/// Assigns field identifiers to a list of raw names and fails, naming both raw names, when two
/// map to the same identifier.
pub fn unique_idents(raws: &[&str]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(raws.len());
    // Identifier → the index of the raw name that took it (a map: models have 10^5 inputs).
    let mut taken: std::collections::HashMap<String, usize> = std::collections::HashMap::with_capacity(raws.len());
    for (i, raw) in raws.iter().enumerate() {
        let id = field_ident(raw);
        if let Some(&j) = taken.get(&id) {
            return Err(Error::invalid(format!(
                "tensor names {:?} and {raw:?} both become the Rust identifier `{id}`; rename one (name override)",
                raws[j]
            ))
            .at(format!("[{i}]")));
        }
        taken.insert(id.clone(), i);
        out.push(id);
    }
    Ok(out)
}

/// Whether `s` can name a Rust module as written: ASCII letters, digits and `_`, not starting
/// with a digit, not `_` alone, not a keyword.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && s != "_" && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !is_rust_keyword(s)
}

fn is_rust_keyword(s: &str) -> bool {
    matches!(
        s,
        "as" | "break"
            | "const"
            | "continue"
            | "crate"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "async"
            | "await"
            | "dyn"
            | "abstract"
            | "become"
            | "box"
            | "do"
            | "final"
            | "macro"
            | "override"
            | "priv"
            | "typeof"
            | "unsized"
            | "virtual"
            | "yield"
            | "try"
            | "gen"
    )
}

/// A TVM operator's C function without the generated prefix, for people:
/// `tvmgen_default_fused_nn_conv2d_add` → `nn_conv2d_add` (`fused_` and `tvmgen_<module>_`
/// dropped; names of functions TVM did not fuse unchanged).
pub fn operator(func: &str) -> &str {
    let rest = match func.strip_prefix("tvmgen_") {
        Some(r) => r.find("_fused_").map(|i| &r[i + "_fused_".len()..]).unwrap_or(func),
        None => func,
    };
    rest.strip_prefix("fused_").unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_names() {
        assert_eq!(operator("tvmgen_default_fused_nn_conv2d_add"), "nn_conv2d_add");
        assert_eq!(operator("tvmgen_kws_fused_reshape_1"), "reshape_1");
        assert_eq!(operator("fused_dense"), "dense");
        assert_eq!(operator("my_op"), "my_op");
        assert_eq!(operator("tvmgen_default_run"), "tvmgen_default_run");
    }

    #[test]
    fn identifiers() {
        assert_eq!(sanitize("serving_default_input_1:0"), "serving_default_input_1_0");
        assert_eq!(field_ident("serving_default_input_1:0"), "serving_default_input_1_0");
        assert_eq!(field_ident("StatefulPartitionedCall_0"), "stateful_partitioned_call_0");
        assert_eq!(field_ident("input_1_int8"), "input_1_int8");
        assert_eq!(field_ident("Reshape_1"), "reshape_1");
        assert_eq!(field_ident("type"), "type_");
        assert_eq!(field_ident("0"), "_0");
        assert_eq!(field_ident("conv1.weight"), "conv1_weight");
        assert_eq!(const_ident("pixels"), "PIXELS");
        assert_eq!(field_ident("HTTPServer"), "http_server");
    }

    #[test]
    fn clashes_name_both() {
        let e = unique_idents(&["a:0", "a_0"]).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("\"a:0\"") && m.contains("\"a_0\""), "{m}");
    }
}
