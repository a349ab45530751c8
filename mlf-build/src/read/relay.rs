//! The `def @main(…)` signature of the Relay text (`relay.txt`, `src/relay.txt`, `src/<m>.relay`).
//!
//! Only the signature is read: parameter names and tensor types, `output_tensor_names`, the
//! return type when printed, and the `ty=` comment on the final expression.

use crate::error::{Error, Result};
use crate::support::dtype::DType;

/// A tensor type `Tensor[(d0, d1, …), dtype]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    /// Shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Element type.
    pub dtype: DType,
}

/// The parsed signature.
#[derive(Clone, Debug, Default)]
pub struct RelayMain {
    /// Parameters in order: raw name and type (when it is a tensor type).
    pub params: Vec<(String, Option<TensorType>)>,
    /// `output_tensor_names=[…]`, when present.
    pub output_names: Option<Vec<String>>,
    /// The return type (`-> …`, or the `ty=` comment of the final expression), flattened.
    pub returns: Option<Vec<TensorType>>,
    /// The `out_dtype="…"` / `dtype="…"` attribute of the final expression (e.g.
    /// `qnn.quantize(…, out_dtype="int8")`), when the return type is not printed.
    pub final_dtype: Option<DType>,
}

/// Parses the `@main` signature out of relay text.
pub fn parse(text: &str) -> Result<RelayMain> {
    let start = text.find("def @main(").ok_or_else(|| Error::missing("`def @main(` signature"))?;
    let after = &text[start + "def @main(".len()..];
    let clean = strip_comments(after);
    // Parameter list up to the matching ')'.
    let close = matching_close(&clean, ')').ok_or_else(|| Error::invalid("unterminated parameter list of @main"))?;
    let list = &clean[..close];
    let mut out = RelayMain::default();
    for (i, item) in split_top(list, ',').into_iter().enumerate() {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if let Some(rest) = item.strip_prefix('%') {
            let (name, ty) = match rest.rfind(": ") {
                Some(p) => (&rest[..p], Some(rest[p + 2..].trim())),
                None => (rest, None),
            };
            let ty = match ty {
                Some(t) if t.starts_with("Tensor[") => {
                    Some(parse_tensor_type(t).map_err(|e| e.at(format!("@main parameter {i} (%{name})")))?)
                }
                _ => None,
            };
            out.params.push((name.to_string(), ty));
        } else if let Some(v) = item.strip_prefix("output_tensor_names=") {
            out.output_names = Some(parse_string_list(v)?);
        }
    }
    // Return type between ')' and '{'.
    let tail = &clean[close + 1..];
    if let Some(brace) = tail.find('{') {
        let head = tail[..brace].trim();
        if let Some(ty) = head.strip_prefix("->") {
            out.returns = Some(parse_type_list(ty.trim())?);
        }
    }
    if out.returns.is_none() {
        out.returns = final_expression_type(after);
    }
    out.final_dtype = final_expression_dtype(after);
    Ok(out)
}

fn final_expression_dtype(after_sig: &str) -> Option<DType> {
    let body_end = after_sig.find("\n}")?;
    let last = after_sig[..body_end].lines().rev().find(|l| !l.trim().is_empty())?;
    let clean = strip_comments(last);
    let key = clean.rfind("dtype=\"")?;
    let rest = &clean[key + "dtype=\"".len()..];
    DType::parse(&rest[..rest.find('"')?]).ok()
}

fn final_expression_type(after_sig: &str) -> Option<Vec<TensorType>> {
    // The body of @main ends at the first line that is exactly "}".
    let body_end = after_sig.find("\n}")?;
    let body = &after_sig[..body_end];
    let last = body.lines().rev().find(|l| !l.trim().is_empty())?;
    let p = last.rfind("/* ty=")?;
    let ty = &last[p + "/* ty=".len()..];
    let end = ty.find(" span=").or_else(|| ty.find("*/"))?;
    parse_type_list(ty[..end].trim()).ok()
}

/// Removes `/* … */` comments.
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find("/*") {
        out.push_str(&rest[..p]);
        match rest[p + 2..].find("*/") {
            Some(q) => rest = &rest[p + 2 + q + 2..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The characters of `s` outside string literals, each with the bracket depth before it.
fn outside_strings(s: &str) -> impl Iterator<Item = (usize, char, i32)> + '_ {
    let mut depth = 0i32;
    let mut in_str = false;
    s.char_indices().filter_map(move |(i, c)| {
        if in_str {
            in_str = c != '"';
            return None;
        }
        let before = depth;
        match c {
            '"' => {
                in_str = true;
                return None;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        Some((i, c, before))
    })
}

/// Index of the `close` that ends a group already opened before `s` starts.
fn matching_close(s: &str, close: char) -> Option<usize> {
    outside_strings(s).find(|&(_, c, depth)| c == close && depth == 0).map(|(i, ..)| i)
}

/// Splits on `sep` at bracket depth 0.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut last = 0;
    for (i, c, depth) in outside_strings(s) {
        if c == sep && depth == 0 {
            parts.push(&s[last..i]);
            last = i + c.len_utf8();
        }
    }
    parts.push(&s[last..]);
    parts
}

fn parse_string_list(v: &str) -> Result<Vec<String>> {
    let v = v.trim();
    let inner = v
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(|| Error::invalid(format!("output_tensor_names: expected [\"…\"], found {v:?}")))?;
    split_top(inner, ',')
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map(str::to_string)
                .ok_or_else(|| Error::invalid(format!("output_tensor_names: {s:?} is not a string")))
        })
        .collect()
}

/// Parses `Tensor[…]` or a tuple `(Tensor[…], …)`, flattened.
fn parse_type_list(t: &str) -> Result<Vec<TensorType>> {
    let t = t.trim();
    if let Some(inner) = t.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
        let mut out = Vec::new();
        for part in split_top(inner, ',') {
            if !part.trim().is_empty() {
                out.extend(parse_type_list(part)?);
            }
        }
        Ok(out)
    } else {
        Ok(vec![parse_tensor_type(t)?])
    }
}

/// Parses `Tensor[(1, 64), float32]`.
pub fn parse_tensor_type(t: &str) -> Result<TensorType> {
    let t = t.trim();
    let inner = t
        .strip_prefix("Tensor[")
        .and_then(|x| x.strip_suffix(']'))
        .ok_or_else(|| Error::invalid(format!("expected Tensor[(…), dtype], found {t:?}")))?;
    let parts = split_top(inner, ',');
    let [shape, dtype] = parts.as_slice() else {
        return Err(Error::invalid(format!("expected Tensor[(…), dtype], found {t:?}")));
    };
    let shape = shape.trim();
    let dims = shape
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| Error::invalid(format!("expected a shape in parentheses, found {shape:?}")))?;
    let mut out = Vec::new();
    for d in dims.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d = d.trim_end_matches("i64");
        let n: u64 = d.parse().map_err(|_| {
            Error::unsupported(format!(
                "dimension {d:?} is dynamic or not a number; microcontroller models need static shapes"
            ))
        })?;
        out.push(n);
    }
    Ok(TensorType { shape: out, dtype: DType::parse(dtype.trim())? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_signature_with_comments_and_names() {
        let text = r#"def @main(%serving_default_input_1:0: Tensor[(1, 5), int8] /* ty=Tensor[(1, 5), int8] span=a:0:0 */, %v_param_1: Tensor[(16), float32], output_tensor_names=["Identity"]) -> Tensor[(1, 10), float32] {
  %0 = foo(%x) /* ty=Tensor[(1), int8] */;
  %0
}"#;
        let m = parse(text).unwrap();
        assert_eq!(m.params.len(), 2);
        assert_eq!(m.params[0].0, "serving_default_input_1:0");
        assert_eq!(m.params[0].1.as_ref().unwrap().shape, vec![1, 5]);
        assert_eq!(m.params[1].1.as_ref().unwrap().shape, vec![16]);
        assert_eq!(m.output_names.as_deref(), Some(&["Identity".to_string()][..]));
        assert_eq!(m.returns.as_ref().unwrap()[0].shape, vec![1, 10]);
    }

    #[test]
    fn final_ty_comment_and_tuple() {
        let text = "def @main(%a: Tensor[(), float32]) {\n  %0 = f(%a);\n  (%0, %0) /* ty=(Tensor[(1, 4), float32], Tensor[(1, 4), int8]) span=x */\n}\n";
        let m = parse(text).unwrap();
        assert_eq!(m.final_dtype, None);
        assert_eq!(m.params[0].1.as_ref().unwrap().shape, Vec::<u64>::new());
        let r = m.returns.unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].dtype, DType::I8);
    }

    #[test]
    fn final_out_dtype() {
        let m = parse("def @main(%a: Tensor[(1, 4), int8]) {\n  %0 = f(%a);\n  qnn.quantize(%0, 0.1f, -128, out_dtype=\"int8\")\n}\n").unwrap();
        assert_eq!(m.final_dtype, Some(DType::I8));
    }

    #[test]
    fn dynamic_dimension_is_refused() {
        assert!(parse("def @main(%a: Tensor[(?, 4), float32]) {\n}\n").is_err());
    }
}
