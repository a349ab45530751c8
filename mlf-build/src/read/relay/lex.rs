//! The tokens of Relay text, in one linear pass with no recursion: words (names, numbers,
//! dtypes, `@main`, `%0`), the punctuation the reader needs, string literals and `/* … */`
//! comments (kept, because TVM prints types in them).

/// One token, borrowing from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// A run of other characters: `def`, `@main`, `%x`, `%serving_default_input_1:0`,
    /// `Tensor`, `1i64`, `0.5f`, `nn.dense`.
    Word(&'a str),
    /// One of `( ) [ ] { } , ; = :`.
    Punct(u8),
    /// `->`.
    Arrow,
    /// A string literal's contents (`"…"` or `'…'`, escapes left as written).
    Str(&'a str),
    /// A comment's contents (between `/*` and `*/`).
    Comment(&'a str),
}

impl Tok<'_> {
    /// An opening bracket.
    pub(super) fn opens(self) -> bool {
        matches!(self, Tok::Punct(b'(' | b'[' | b'{'))
    }

    /// A closing bracket.
    pub(super) fn closes(self) -> bool {
        matches!(self, Tok::Punct(b')' | b']' | b'}'))
    }
}

/// Characters that end a word (besides white space, quotes and comments).
fn is_punct(b: u8) -> bool {
    matches!(b, b'(' | b')' | b'[' | b']' | b'{' | b'}' | b',' | b';' | b'=')
}

/// Splits `text` into tokens. Never fails: an unterminated string or comment runs to the end.
pub(super) fn lex(text: &str) -> Vec<Tok<'_>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = find(b, i + 2, b"*/").unwrap_or(b.len());
            out.push(Tok::Comment(&text[i + 2..end]));
            i = (end + 2).min(b.len());
        } else if c == b'"' || c == b'\'' {
            let end = string_end(b, i + 1, c);
            out.push(Tok::Str(&text[i + 1..end]));
            i = (end + 1).min(b.len());
        } else if is_punct(c) {
            out.push(Tok::Punct(c));
            i += 1;
        } else if c == b':' && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            // `%x: Tensor[…]`: a separator. A colon inside a name (`%input_1:0`) is part of it.
            out.push(Tok::Punct(b':'));
            i += 1;
        } else if c == b'-' && b.get(i + 1) == Some(&b'>') {
            out.push(Tok::Arrow);
            i += 2;
        } else {
            let start = i;
            while i < b.len() {
                let c = b[i];
                let ends = c.is_ascii_whitespace()
                    || is_punct(c)
                    || c == b'"'
                    || c == b'\''
                    || (c == b'/' && b.get(i + 1) == Some(&b'*'))
                    || (c == b':' && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()))
                    || (c == b'-' && b.get(i + 1) == Some(&b'>'));
                if ends {
                    break;
                }
                i += 1;
            }
            // Every byte that starts a token is ASCII, so `start..i` is on character boundaries.
            out.push(Tok::Word(&text[start..i]));
        }
    }
    out
}

/// The first index at or after `from` where `pat` starts.
fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(pat.len()).position(|w| w == pat).map(|p| from + p)
}

/// The index of the quote that ends a string starting at `from` (or the end of the text).
fn string_end(b: &[u8], from: usize, quote: u8) -> usize {
    let mut i = from;
    while i < b.len() && b[i] != quote {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    i.min(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_colons_arrows_comments_and_strings() {
        let toks = lex("def @main(%in:0: Tensor[(1), int8] /* ty=x */, a=\"s(\", k='c') -> float32 {");
        assert_eq!(
            toks,
            vec![
                Tok::Word("def"),
                Tok::Word("@main"),
                Tok::Punct(b'('),
                Tok::Word("%in:0"),
                Tok::Punct(b':'),
                Tok::Word("Tensor"),
                Tok::Punct(b'['),
                Tok::Punct(b'('),
                Tok::Word("1"),
                Tok::Punct(b')'),
                Tok::Punct(b','),
                Tok::Word("int8"),
                Tok::Punct(b']'),
                Tok::Comment(" ty=x "),
                Tok::Punct(b','),
                Tok::Word("a"),
                Tok::Punct(b'='),
                Tok::Str("s("),
                Tok::Punct(b','),
                Tok::Word("k"),
                Tok::Punct(b'='),
                Tok::Str("c"),
                Tok::Punct(b')'),
                Tok::Arrow,
                Tok::Word("float32"),
                Tok::Punct(b'{'),
            ]
        );
    }

    #[test]
    fn unterminated_pieces_run_to_the_end() {
        assert_eq!(lex("a /* open"), vec![Tok::Word("a"), Tok::Comment(" open")]);
        assert_eq!(lex("\"open\\"), vec![Tok::Str("open\\")]);
        assert_eq!(lex("é:"), vec![Tok::Word("é"), Tok::Punct(b':')]);
    }
}
