//! `cfg(…)` keys of cargo's `[target]` tables (`[target.'cfg(all(target_arch = "arm",
//! target_os = "none"))']`), evaluated against a target's `rustc --print cfg` values.

use mlf_build::Error;

/// Nesting of `all`/`any`/`not` deeper than this is refused.
const MAX_DEPTH: usize = 64;

/// Whether the key `cfg(…)` holds for a target with `cfgs` (names and `key="value"` pairs).
pub fn matches(key: &str, cfgs: &[(String, Option<String>)]) -> Result<bool, Error> {
    let bad = |why: &str| Error::invalid(format!("[target.'{key}']: {why}"));
    let inner = key.strip_prefix("cfg(").and_then(|k| k.strip_suffix(')')).ok_or_else(|| bad("not a cfg(…) key"))?;
    let tokens = tokenize(inner).ok_or_else(|| bad("cannot read it"))?;
    let mut p = Parser { tokens: &tokens, at: 0, cfgs };
    let v = p.predicate(0).ok_or_else(|| bad("cannot read it (or it nests too deep)"))?;
    if p.at != tokens.len() {
        return Err(bad("unexpected text after the predicate"));
    }
    Ok(v)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Str(String),
    Punct(char),
}

fn tokenize(s: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next()? {
                    '"' => break,
                    ch => text.push(ch),
                }
            }
            out.push(Token::Str(text));
        } else if c.is_alphanumeric() || c == '_' {
            let mut text = String::new();
            while let Some(&ch) = chars.peek().filter(|ch| ch.is_alphanumeric() || **ch == '_') {
                text.push(ch);
                chars.next();
            }
            out.push(Token::Ident(text));
        } else if matches!(c, '(' | ')' | ',' | '=') {
            out.push(Token::Punct(c));
            chars.next();
        } else {
            return None;
        }
    }
    Some(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    cfgs: &'a [(String, Option<String>)],
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.at);
        self.at += 1;
        t
    }

    fn peek_is(&self, c: char) -> bool {
        self.tokens.get(self.at) == Some(&Token::Punct(c))
    }

    fn predicate(&mut self, depth: usize) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        let Token::Ident(name) = self.next()?.clone() else { return None };
        match name.as_str() {
            "all" | "any" | "not" => {
                (self.next()? == &Token::Punct('(')).then_some(())?;
                let mut values = Vec::new();
                while !self.peek_is(')') {
                    values.push(self.predicate(depth + 1)?);
                    if self.peek_is(',') {
                        self.at += 1;
                    } else if !self.peek_is(')') {
                        return None;
                    }
                }
                self.at += 1;
                match name.as_str() {
                    "all" => Some(values.iter().all(|v| *v)),
                    "any" => Some(values.iter().any(|v| *v)),
                    _ => (values.len() == 1).then(|| !values[0]),
                }
            }
            _ if self.peek_is('=') => {
                self.at += 1;
                let Token::Str(value) = self.next()?.clone() else { return None };
                Some(self.cfgs.iter().any(|(k, v)| *k == name && v.as_deref() == Some(value.as_str())))
            }
            _ => Some(self.cfgs.iter().any(|(k, v)| *k == name && v.is_none())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm() -> Vec<(String, Option<String>)> {
        vec![
            ("target_arch".into(), Some("arm".into())),
            ("target_os".into(), Some("none".into())),
            ("target_feature".into(), Some("dsp".into())),
            ("target_feature".into(), Some("thumb2".into())),
            ("debug_assertions".into(), None),
        ]
    }

    #[test]
    fn evaluates_cargo_cfg_keys() {
        let m = |k: &str| matches(k, &arm()).unwrap();
        assert!(m(r#"cfg(all(target_arch = "arm", target_os = "none"))"#));
        assert!(!m(r#"cfg(all(target_arch = "arm", target_os = "linux"))"#));
        assert!(m(r#"cfg(any(target_arch = "riscv64", target_feature = "dsp"))"#));
        assert!(m(r#"cfg(not(unix))"#));
        assert!(m("cfg(debug_assertions)"));
        assert!(m(r#"cfg(all(target_arch = "arm",))"#));
        for bad in ["cfg(all(", "cfg(target_arch = )", "cfg(x y)", "cfg(not(a, b))", "arm"] {
            assert!(matches(bad, &arm()).is_err(), "{bad}");
        }
        let deep = format!("cfg({}unix{})", "not(".repeat(100), ")".repeat(100));
        assert!(matches(&deep, &arm()).unwrap_err().to_string().contains("too deep"));
    }
}
