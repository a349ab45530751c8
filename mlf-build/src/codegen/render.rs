//! Turning generated tokens into what is compiled: tokens for `include_model!` to return, or
//! readable Rust source for the build step to write.
//!
//! Comments are not tokens, so generators mark them with two macro calls that are valid as an
//! item, an associated item and a statement alike: `__mlf_comment!("text");` becomes a `// text`
//! comment (wrapped at 100 columns) and `__mlf_blank!();` an empty line. [`tokens`] drops both;
//! [`text`] formats the code with `prettyplease` and writes them out.

use proc_macro2::{Group, TokenStream, TokenTree};
use quote::quote;

/// The marker of a comment.
const COMMENT: &str = "__mlf_comment";
/// The marker of an empty line.
const BLANK: &str = "__mlf_blank";

/// A `// text` comment where it stands (text on one line; [`text`] wraps it).
pub fn comment(text: impl AsRef<str>) -> TokenStream {
    let text = text.as_ref();
    quote!(__mlf_comment!(#text);)
}

/// An empty line where it stands.
pub fn blank() -> TokenStream {
    quote!(__mlf_blank!();)
}

/// The tokens without the comment and empty-line markers (what a macro returns).
pub fn tokens(ts: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut i = 0;
    while i < trees.len() {
        let marker = matches!(&trees[i], TokenTree::Ident(id) if id == COMMENT || id == BLANK)
            && matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!')
            && matches!(trees.get(i + 2), Some(TokenTree::Group(_)))
            && matches!(trees.get(i + 3), Some(TokenTree::Punct(p)) if p.as_char() == ';');
        if marker {
            i += 4;
            continue;
        }
        out.push(match &trees[i] {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), tokens(g.stream()));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            t => t.clone(),
        });
        i += 1;
    }
    out.into_iter().collect()
}

/// Readable Rust source: `header` (comment lines, each without its `// `), an empty line, then
/// the code formatted by `prettyplease` with the markers written out.
#[cfg(feature = "build")]
pub fn text(ts: &TokenStream, header: &[String]) -> crate::error::Result<String> {
    use crate::error::Error;
    let file: syn::File = syn::parse2(ts.clone())
        .map_err(|e| Error::invalid(format!("generated code does not parse (a bug in mlf): {e}")))?;
    let code = prettyplease::unparse(&file);
    let mut out = String::with_capacity(code.len() + 1024);
    for line in header {
        out.push_str(&format!("// {line}\n"));
    }
    out.push('\n');
    let mut lines = code.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed == format!("{BLANK}!();") {
            // No empty line at the start of a block, or two in a row.
            if !out.ends_with("{\n") && !out.ends_with("\n\n") {
                out.push('\n');
            }
        } else if let Some(rest) = trimmed.strip_prefix(&format!("{COMMENT}!(")) {
            // `__mlf_comment!("…");` on one line, or broken after `(` when it is long.
            let mut call = rest.to_string();
            while !call.trim_end().ends_with(");") {
                let Some(next) = lines.next() else { break };
                call.push_str(next.trim());
            }
            let lit = call.trim_end().strip_suffix(");").unwrap_or(&call).trim();
            let text = syn::parse_str::<syn::LitStr>(lit)
                .map_err(|e| Error::invalid(format!("a generated comment does not parse (a bug in mlf): {e}")))?
                .value();
            for chunk in wrap(&text, 100usize.saturating_sub(indent.len() + 3).max(40)) {
                out.push_str(&format!("{indent}// {chunk}\n"));
            }
        } else if (trimmed.starts_with("/// ") || trimmed.starts_with("//! ")) && line.chars().count() > 100 {
            for chunk in wrap(&trimmed[4..], 100 - indent.len() - 4) {
                out.push_str(&format!("{indent}{} {chunk}\n", &trimmed[..3]));
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
        // An empty line never closes a block.
        if lines.peek().is_some_and(|next| next.trim_start().starts_with('}')) && out.ends_with("\n\n") {
            out.pop();
        }
    }
    Ok(out)
}

/// Splits `text` into lines of at most `width` characters at spaces (a longer word stands
/// alone).
#[cfg(feature = "build")]
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_dropped_from_tokens_at_every_depth() {
        let c = comment("a tensor");
        let b = blank();
        let ts = quote! { #c const A: u8 = 1; #b fn f() { #c let x = 1; #b { #c } } };
        let out = tokens(ts).to_string();
        assert!(!out.contains(COMMENT) && !out.contains(BLANK), "{out}");
        assert!(out.contains("const A") && out.contains("let x = 1"), "{out}");
    }

    #[cfg(feature = "build")]
    #[test]
    fn long_comments_are_wrapped() {
        let long = "word ".repeat(60);
        let c = comment(&long);
        let t = text(&quote! { fn f() { #c let x = 1; } }, &[]).unwrap();
        let lines: Vec<&str> = t.lines().filter(|l| l.trim_start().starts_with("//")).collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines.iter().all(|l| l.len() <= 100 && l.starts_with("    // word")), "{t}");
    }

    #[cfg(feature = "build")]
    #[test]
    fn markers_become_comments_and_empty_lines() {
        let c = comment("the \"input\" tensor ≤ 64 bytes");
        let b = blank();
        let ts = quote! { const A: u8 = 1; #b #c fn f() { #b let x = 1; #b #c let y = x; } };
        let t = text(&ts, &["@generated".into()]).unwrap();
        assert_eq!(
            t,
            "// @generated\n\nconst A: u8 = 1;\n\n// the \"input\" tensor ≤ 64 bytes\nfn f() {\n    let x = 1;\n\n    // the \"input\" tensor ≤ 64 bytes\n    let y = x;\n}\n"
        );
    }
}
