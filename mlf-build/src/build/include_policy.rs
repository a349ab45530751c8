//! What the model's C may make the compiler read: **the include policy**, checked on every C
//! file the compiler sees (sources and the archive's headers) before it runs.
//!
//! An include must resolve to the archive's own sources or headers, mlf's headers, or — with
//! its name on `build::includes::is_system_header` — the C library's and compiler's headers. Anything else is
//! refused naming the file and line: absolute paths (`"/dev/zero"`, which would make the
//! compiler read forever), paths that climb out of their folder (`"../../../../etc/hostname"`,
//! whose contents a compiler error would print), computed includes
//! (`#include MACRO`), `#embed`, `#pragma GCC dependency` and assembler `.incbin`/`.include`.
//!
//! The check reads the text as the preprocessor does (line splices, comments, the `%:` digraph,
//! trigraphs), so a directive cannot hide from it. A header found nowhere (by a path that stays in
//! its folder) is left to the classification in `build::includes`, which knows vendor libraries
//! and what the user supplied; `build::model` runs both before the compiler.

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::model::ModelDesc;

/// The files an include may reach, as the compile step lays them out: sources in `src/`,
/// mlf's headers in `include/`, the archive's headers in `model-include/`.
struct Reachable {
    /// Source file names (the compile step writes every source into one folder).
    sources: BTreeSet<String>,
    /// mlf's headers, relative to their folder.
    mlf_headers: BTreeSet<String>,
    /// The archive's headers, relative to `codegen/host/include/`.
    model_headers: BTreeSet<String>,
}

impl Reachable {
    /// What the compile step of `desc` lays out.
    fn of(desc: &ModelDesc) -> Reachable {
        let base = |m: &str| m.rsplit('/').next().unwrap_or(m).to_string();
        Reachable {
            sources: desc.code.sources.iter().map(|s| base(&s.member)).collect(),
            mlf_headers: super::includes::HEADERS.iter().map(|(p, _)| p.to_string()).collect(),
            model_headers: desc.code.headers.iter().map(|(p, _)| p.clone()).collect(),
        }
    }
}

/// Where a file the compiler reads lives.
#[derive(Clone, Copy)]
enum Folder {
    Sources,
    ModelHeaders,
}

/// Checks every C source and header of `desc` against the include policy; the error names the
/// file (its member in the archive) and the line.
pub(crate) fn check(desc: &ModelDesc) -> Result<()> {
    let reach = Reachable::of(desc);
    for s in &desc.code.sources {
        check_file(&s.member, &String::from_utf8_lossy(&s.bytes), Folder::Sources, "", &reach)?;
    }
    for (rel, bytes) in &desc.code.headers {
        let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        let member = format!("codegen/host/include/{rel}");
        check_file(&member, &String::from_utf8_lossy(bytes), Folder::ModelHeaders, dir, &reach)?;
    }
    Ok(())
}

fn check_file(member: &str, text: &str, folder: Folder, dir: &str, reach: &Reachable) -> Result<()> {
    // A trigraph is read one way by a compiler that applies them (`-trigraphs`, a strict `-std`)
    // and another by one that does not (`??/` at a line's end splices the line or not): no
    // reading of the text can be both, so a model's C may not hold one.
    let trigraph = text.lines().position(|l| {
        l.match_indices("??").any(|(k, _)| l[k + 2..].starts_with(['=', '/', '\'', '(', ')', '!', '<', '>', '-']))
    });
    if let Some(k) = trigraph {
        return Err(Error::unsupported(
            "a trigraph (??= ??/ ??' ??( ??) ??! ??< ??> ??-): compilers read it differently; a model's C may not hold one",
        )
        .in_member(member.to_string())
        .at(format!("line {}", k + 1)));
    }
    for line in logical_lines(text) {
        let refuse = |why: String| {
            Err(Error::unsupported(why).in_member(member.to_string()).at(format!("line {}", line.number)))
        };
        let t = line.text.trim_start();
        let directive = t.strip_prefix('#').or_else(|| t.strip_prefix("%:"));
        if let Some(d) = directive {
            let d = d.trim_start();
            let name: String = d.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let operand = d[name.len()..].trim();
            match name.as_str() {
                "include" | "include_next" | "import" => {
                    if let Err(why) = resolve(operand, folder, dir, reach) {
                        let shown =
                            if operand.len() <= 200 { operand.to_string() } else { crate::error::shown(operand) };
                        return refuse(format!("#{name} {shown}: {why}"));
                    }
                }
                "embed" => return refuse("#embed reads a file into the program; a model's C may not".into()),
                "pragma" if operand.split_whitespace().any(|w| w == "dependency") => {
                    return refuse("#pragma dependency makes the compiler look at another file".into());
                }
                _ => {}
            }
        }
        // Operators a macro can build (`_Pragma("GCC dependency …")` from a stringified argument)
        // or that look at a host file (`__has_include("/etc/shadow")`): no model's C uses them.
        for (word, why) in [
            ("_Pragma", "_Pragma can build a pragma (GCC dependency …) that makes the compiler look at another file"),
            ("__has_include", "__has_include makes the compiler look for a file, which may be a host file"),
            // Pasting could build either name (`__has_ ## include`) where no check sees it.
            ("##", "token pasting (##) can build names the check cannot see, such as __has_include"),
            ("%:%:", "token pasting (%:%:) can build names the check cannot see, such as __has_include"),
        ] {
            if line.text.contains(word) {
                return refuse(format!("{why}; a model's C may not use it"));
            }
        }
        for s in &line.strings {
            let lower = s.to_ascii_lowercase();
            if lower.contains(".incbin") || lower.contains(".include") {
                return refuse(format!(
                    "the string {} holds an assembler directive that reads a file",
                    crate::error::shown(s)
                ));
            }
        }
    }
    Ok(())
}

/// Resolves an include's operand as the compiler would search for it, or says why it may not be.
fn resolve(operand: &str, folder: Folder, dir: &str, reach: &Reachable) -> std::result::Result<(), String> {
    let (path, angled) = if let Some(r) = operand.strip_prefix('"') {
        (r.split_once('"').ok_or("an unterminated \"…\" include")?.0, false)
    } else if let Some(r) = operand.strip_prefix('<') {
        (r.split_once('>').ok_or("an unterminated <…> include")?.0, true)
    } else {
        return Err("a computed include (a macro, not \"file\" or <file>) cannot be checked".into());
    };
    if path.is_empty() || path.starts_with('/') || path.starts_with('\\') || path.contains(':') || path.contains('\0') {
        return Err("an absolute path: a model's C includes only its own headers, mlf's and the C library's".into());
    }
    // The folders the compiler searches, in its order: the including file's own folder (for
    // "…" only), then mlf's headers and the archive's headers (the -I folders).
    let here: (&BTreeSet<String>, &str) = match folder {
        Folder::Sources => (&reach.sources, ""),
        Folder::ModelHeaders => (&reach.model_headers, dir),
    };
    let mut searched = Vec::new();
    if !angled {
        searched.push(here);
    }
    searched.push((&reach.mlf_headers, ""));
    searched.push((&reach.model_headers, ""));
    // The compiler takes the first folder that has the file: every folder searched before it
    // must keep the path inside itself (else the compiler would look at a host file there).
    for (files, base) in searched {
        let Some(joined) = join(base, path) else {
            return Err("the path climbs out of the folder it is searched in".into());
        };
        if files.contains(&joined) {
            return Ok(());
        }
    }
    if super::includes::is_system_header(path) {
        return Ok(());
    }
    // A header found nowhere here, by a path that stays inside its folder: a vendor library's
    // (CMSIS-NN…) or one nobody knows. Which, and whether the user supplied it, is the
    // classification's (`build::includes`, checked by `build::runnable` right after this check,
    // before the compiler runs): it refuses it, naming the library to supply, unless the user
    // gave include folders.
    Ok(())
}

/// `base/path` with `.` and `..` resolved, or `None` when it climbs above `base`'s root.
fn join(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in path.split(['/', '\\']) {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// A line as the preprocessor sees it: spliced (`\` + newline), comments replaced by a space,
/// trigraphs replaced; with its first physical line number and its string literals.
struct Line {
    number: usize,
    text: String,
    strings: Vec<String>,
}

/// Characters of a text with line splices (`\` + newline) removed, counting physical lines.
struct Chars {
    b: Vec<char>,
    i: usize,
    physical: usize,
    pending: Option<char>,
}

impl Chars {
    fn next(&mut self) -> Option<char> {
        if let Some(c) = self.pending.take() {
            return Some(c);
        }
        loop {
            let c = *self.b.get(self.i)?;
            // `\` then a line end is a splice; GCC splices over spaces and tabs before the line
            // end too (with a warning the build hides).
            let splice = if c == '\\' {
                let blanks =
                    self.b[self.i + 1..].iter().take_while(|b| matches!(b, ' ' | '\t' | '\x0b' | '\x0c')).count();
                match self.b.get(self.i + 1 + blanks) {
                    Some('\n') => blanks + 2,
                    _ => 0,
                }
            } else {
                0
            };
            if splice == 0 {
                self.i += 1;
                return Some(c);
            }
            self.i += splice;
            self.physical += 1;
        }
    }

    /// Skips a block comment (after `/*`), counting its lines.
    fn block_comment(&mut self) {
        while let Some(c) = self.next() {
            match c {
                '*' => match self.next() {
                    Some('/') | None => return,
                    Some(d) => self.pending = Some(d),
                },
                '\n' => self.physical += 1,
                _ => {}
            }
        }
    }

    /// Skips a line comment (after `//`), leaving the newline that ends it.
    fn line_comment(&mut self) {
        while let Some(c) = self.next() {
            if c == '\n' {
                self.pending = Some('\n');
                return;
            }
        }
    }

    /// A raw string's delimiter, contents and end (after its opening `"`), read as GCC reads them:
    /// without line splices; the lines it spans are counted, its contents returned.
    fn raw_literal(&mut self, text: &mut String) -> String {
        let start = self.i;
        let open = self.b[start..].iter().take(17).position(|c| *c == '(');
        let Some(open) = open else {
            // Not a raw string GCC accepts (it reports the error): read as an ordinary one.
            return self.literal('"', text);
        };
        let mut close: Vec<char> = vec![')'];
        close.extend(&self.b[start..start + open]);
        close.push('"');
        let body = start + open + 1;
        let end = self.b[body..].windows(close.len()).position(|w| w == close.as_slice()).map(|p| body + p);
        let stop = end.map_or(self.b.len(), |e| e + close.len());
        let lit: String = self.b[body..end.unwrap_or(self.b.len())].iter().collect();
        self.physical += self.b[start..stop].iter().filter(|c| **c == '\n').count();
        self.i = stop;
        text.push('"');
        lit
    }

    /// A string or character literal (after its opening `quote`): pushed to `text`, its
    /// contents returned.
    fn literal(&mut self, quote: char, text: &mut String) -> String {
        let mut lit = String::new();
        while let Some(d) = self.next() {
            if d == '\n' {
                self.pending = Some('\n');
                break;
            }
            text.push(d);
            if d == '\\' {
                if let Some(e) = self.next() {
                    text.push(e);
                    lit.push(e);
                }
                continue;
            }
            if d == quote {
                break;
            }
            lit.push(d);
        }
        lit
    }
}

/// Whether a `"` after `text` opens a raw string: `text` ends with the prefix `R`, `u8R`, `uR`,
/// `UR` or `LR`, itself not the end of a longer identifier.
fn raw_prefix(text: &str) -> bool {
    let Some(before) = text.strip_suffix('R') else { return false };
    let before = ["u8", "u", "U", "L", ""].iter().find_map(|p| before.strip_suffix(p)).unwrap_or(before);
    !before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii())
}

/// The logical lines of `text`. A carriage return alone ends a line, a NUL is whitespace and a
/// byte order mark at the start is skipped, as they are for GCC (`\0#include …` is a directive to
/// it); a byte order mark elsewhere is taken as whitespace too (a directive the compiler would
/// not see is refused all the same).
fn logical_lines(text: &str) -> Vec<Line> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n").replace(['\0', '\u{feff}'], " ");
    let mut chars = Chars { b: replace_trigraphs(&text).chars().collect(), i: 0, physical: 1, pending: None };
    let mut lines = Vec::new();
    let mut cur = Line { number: 1, text: String::new(), strings: Vec::new() };
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                chars.physical += 1;
                let next = Line { number: chars.physical, text: String::new(), strings: Vec::new() };
                lines.push(std::mem::replace(&mut cur, next));
            }
            '/' => match chars.next() {
                Some('*') => {
                    chars.block_comment();
                    cur.text.push(' ');
                }
                Some('/') => chars.line_comment(),
                Some(d) => {
                    cur.text.push('/');
                    chars.pending = Some(d);
                }
                None => cur.text.push('/'),
            },
            '"' if raw_prefix(&cur.text) => {
                // A raw string (`R"x(…)x"`, which GCC accepts in C): it may span lines and hold
                // what looks like a comment or a quote.
                cur.text.push(c);
                let lit = chars.raw_literal(&mut cur.text);
                cur.strings.push(lit);
            }
            '"' | '\'' => {
                cur.text.push(c);
                let lit = chars.literal(c, &mut cur.text);
                if c == '"' {
                    cur.strings.push(lit);
                }
            }
            c => cur.text.push(c),
        }
    }
    lines.push(cur);
    lines
}

/// `??=` → `#`, `??/` → `\` and the other trigraphs, so that a compiler that applies them (with
/// `-trigraphs` or a strict `-std`) sees nothing the check did not.
fn replace_trigraphs(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("??") {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("??") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let sub = match after.chars().next() {
            Some('=') => Some('#'),
            Some('/') => Some('\\'),
            Some('\'') => Some('^'),
            Some('(') => Some('['),
            Some(')') => Some(']'),
            Some('!') => Some('|'),
            Some('<') => Some('{'),
            Some('>') => Some('}'),
            Some('-') => Some('~'),
            _ => None,
        };
        match sub {
            Some(c) => {
                out.push(c);
                rest = &after[1..];
            }
            None => {
                out.push('?');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reachable {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Reachable {
            sources: set(&["lib0.c", "lib1.c"]),
            mlf_headers: set(&["tvm/runtime/c_runtime_api.h", "dlpack/dlpack.h"]),
            model_headers: set(&["tvmgen_default.h", "sub/inner.h"]),
        }
    }

    fn check_src(text: &str) -> std::result::Result<(), String> {
        check_file("codegen/host/src/lib0.c", text, Folder::Sources, "", &reach()).map_err(|e| e.to_string())
    }

    #[test]
    fn allows_what_the_archive_mlf_and_the_c_library_provide() {
        let ok = "#include \"tvmgen_default.h\"\n#include <tvm/runtime/c_runtime_api.h>\n#include \"dlpack/dlpack.h\"\n\
                  #include <math.h>\n#include \"stdint.h\"\n#include \"lib1.c\"\n  #  include <string.h> // ok\n";
        check_src(ok).unwrap();
        check_file(
            "codegen/host/include/sub/inner.h",
            "#include \"../tvmgen_default.h\"\n",
            Folder::ModelHeaders,
            "sub",
            &reach(),
        )
        .unwrap();
    }

    #[test]
    fn refuses_host_files_naming_file_and_line() {
        for (text, line, why) in [
            ("#include \"/etc/passwd\"\n", 1, "absolute path"),
            ("\n\n#include \"/dev/zero\"\n", 3, "absolute path"),
            ("#include \"../../../../etc/hostname\"\n", 1, "climbs out"),
            ("#include <../../etc/passwd>\n", 1, "climbs out"),
            ("#include <sys/../../../../etc/passwd>\n", 1, "climbs out"),
            ("#define F \"/etc/passwd\"\n#include F\n", 2, "computed include"),
            ("#inc\\\nlude \"/etc/passwd\"\n", 1, "absolute path"),
            ("# /* hidden */ include \"/etc/passwd\"\n", 1, "absolute path"),
            ("%:include \"/etc/passwd\"\n", 1, "absolute path"),
            ("??=include \"/etc/passwd\"\n", 1, "trigraph"),
            ("const char *s = \"abc??/\n\";/*\n#include \"/etc/passwd\"\n// */\n", 1, "trigraph"),
            ("#include_next </etc/passwd>\n", 1, "absolute path"),
            ("#import \"/etc/passwd\"\n", 1, "absolute path"),
            ("/* a\n comment */\n#embed \"/etc/passwd\"\n", 3, "#embed"),
            ("#pragma GCC dependency \"/etc/passwd\"\n", 1, "dependency"),
            ("__asm__(\".incbin \\\"/etc/passwd\\\"\");\n", 1, "assembler directive"),
        ] {
            let e = check_src(text).unwrap_err();
            assert!(e.contains(&format!("codegen/host/src/lib0.c: line {line}: ")), "{text:?}: {e}");
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn directives_hidden_by_what_gcc_reads_differently_are_found() {
        for (text, line, why) in [
            // A raw string holding `/*`: GCC ends it on its line; a lexer without raw strings sees
            // a comment swallowing the include.
            ("const char *s = R\"x(\"/*)x\";\n#include \"/etc/passwd\"\n// */\n", 2, "absolute path"),
            ("const char *s = u8R\"(\"/*)\";\n\n#include \"/dev/zero\"\n// */\n", 3, "absolute path"),
            // A raw string over lines, then the include.
            ("const char *s = R\"d(\n/*\n)d\";\n#include \"/etc/passwd\"\n", 4, "absolute path"),
            // A carriage return alone ends a line for GCC.
            ("int a; /* x */\r#include \"/etc/passwd\"\r", 2, "absolute path"),
            // GCC ignores a NUL (with a warning the build hides): the line is a directive.
            ("int a;\n\0#include \"/etc/passwd\"\n", 2, "absolute path"),
            ("int a;\n\0\0 # \0 include \"/etc/passwd\"\n", 2, "absolute path"),
            // A splice over trailing blanks (GCC's): the string goes on, `/*` is inside it.
            ("const char* s = \"abc\\  \n/*\";\n#include \"/etc/passwd\"\n// */\n", 3, "absolute path"),
            // GCC skips a byte order mark at the start of the file.
            ("\u{feff}#include \"/etc/passwd\"\n", 1, "absolute path"),
            ("#if __has_include(\"/etc/shadow\")\n#endif\n", 1, "__has_include"),
            ("#define P(a, b) a ## b\n#if P(__has_, include)(\"/etc/shadow\")\n#endif\n", 1, "token pasting"),
            ("#define P(x) _Pragma(#x)\nP(GCC dependency \"/etc/passwd\")\n", 1, "_Pragma"),
            ("const char *s = R\"(.in\\143bin)\";\nconst char *t = R\"(.incbin)\";\n", 2, "assembler directive"),
        ] {
            let e = check_src(text).unwrap_err();
            assert!(e.contains(&format!("codegen/host/src/lib0.c: line {line}: ")), "{text:?}: {e}");
            assert!(e.contains(why), "{text:?}: {e}");
        }
        // A raw string's contents are not directives.
        check_src("const char *s = R\"x(\n#include \"/etc/passwd\"\n)x\";\nint after;\n").unwrap();
        // `FOOR"…"` is an identifier then a string, not a raw string.
        check_src("#define FOOR \"a\"\nconst char *s = FOOR\"(\";\n").unwrap();
    }

    #[test]
    fn headers_found_nowhere_are_left_to_the_classification() {
        // build::runnable refuses them (naming the vendor library) unless the user supplies them.
        check_src("#include \"secret.h\"\n#include <arm_nnfunctions.h>\n").unwrap();
    }

    #[test]
    fn comments_and_strings_are_not_directives() {
        check_src(
            "// #include \"/etc/passwd\"\n/* #include </etc/passwd> */\nconst char* s = \"#include </etc/x>\";\n",
        )
        .unwrap();
    }
}
