//! Messages in cargo's shape, on stderr:
//!
//! ```text
//! error: what went wrong
//!   --> Cargo.toml:23:1 (package.metadata.mlf.models[0].ram)
//! help: what to do
//! note: why
//! ```
//!
//! coloured on a terminal as cargo colours them (`--color auto|always|never`; `NO_COLOR`,
//! `CLICOLOR_FORCE` and a non-terminal stderr are respected through `anstream`). The location of
//! a `Cargo.toml` key has its line and column, found with `toml`'s spans.

use std::io::Write;
use std::path::Path;

use anstyle::{AnsiColor, Style};
use mlf_build::Error;

/// How bad a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `error:` (red).
    Error,
    /// `warning:` (yellow).
    Warning,
}

/// `--color`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Color {
    /// Colour when stderr is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Applies `--color` to every message written afterwards (`CARGO_TERM_COLOR` when `--color`
/// was not given, as cargo does).
pub fn set_color(choice: Option<Color>) {
    let from_env = || match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok("always") => Color::Always,
        Ok("never") => Color::Never,
        _ => Color::Auto,
    };
    let choice = match choice.unwrap_or_else(from_env) {
        Color::Auto => anstream::ColorChoice::Auto,
        Color::Always => anstream::ColorChoice::Always,
        Color::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

/// One message: what, where, what to do, why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diag {
    /// What went wrong (one line).
    pub message: String,
    /// Where: `file[:line:col]`, with the archive member and field after it.
    pub location: Option<String>,
    /// What to do.
    pub help: Vec<String>,
    /// Why, or remarks.
    pub notes: Vec<String>,
}

impl Diag {
    /// A message with nothing else.
    pub fn new(message: impl Into<String>) -> Diag {
        Diag { message: message.into(), ..Diag::default() }
    }

    /// Adds a `help:` line.
    pub fn help(mut self, help: impl Into<String>) -> Diag {
        self.help.push(help.into());
        self
    }

    /// Adds a `note:` line.
    pub fn note(mut self, note: impl Into<String>) -> Diag {
        self.notes.push(note.into());
        self
    }

    /// An mlf error in this shape: the message, the file (with the line and column of the field
    /// when the file is a `Cargo.toml`), member and field, and the help, given or read from the
    /// message's last clause when it says what to do.
    pub fn of(e: &Error) -> Diag {
        let (message, said_help) = split_help(&e.message());
        let mut location = e.file.as_ref().map(|f| with_position(f, e.field.as_deref()));
        let inner: Vec<&str> = e.member.iter().chain(e.field.iter()).map(String::as_str).collect();
        if !inner.is_empty() {
            location = Some(match location {
                Some(l) => format!("{l} ({})", inner.join(": ")),
                None => inner.join(": "),
            });
        }
        let help = e.help().map(str::to_string).or(said_help).into_iter().collect();
        Diag { message, location, help, notes: e.note().map(str::to_string).into_iter().collect() }
    }

    /// The message as text, styled when `color` is true.
    pub fn render(&self, level: Level, color: bool) -> String {
        let paint = |style: Style, text: &str| {
            if color { format!("{}{text}{}", style.render(), style.render_reset()) } else { text.to_string() }
        };
        let (word, colour) = match level {
            Level::Error => ("error", AnsiColor::BrightRed),
            Level::Warning => ("warning", AnsiColor::BrightYellow),
        };
        let bold = Style::new().bold();
        let mut out = format!(
            "{}{} {}\n",
            paint(bold.fg_color(Some(colour.into())), word),
            paint(bold, ":"),
            paint(bold, &self.message)
        );
        if let Some(l) = &self.location {
            out.push_str(&format!("  {} {l}\n", paint(bold.fg_color(Some(AnsiColor::BrightBlue.into())), "-->")));
        }
        let cyan = bold.fg_color(Some(AnsiColor::BrightCyan.into()));
        for h in &self.help {
            out.push_str(&format!("{} {h}\n", paint(cyan, "help:")));
        }
        for n in &self.notes {
            out.push_str(&format!("{} {n}\n", paint(bold.fg_color(Some(AnsiColor::BrightGreen.into())), "note:")));
        }
        out
    }

    /// Writes the message to stderr.
    pub fn emit(&self, level: Level) {
        let mut stderr = anstream::stderr();
        let color = !matches!(stderr.current_choice(), anstream::ColorChoice::Never);
        let _ = stderr.write_all(self.render(level, color).as_bytes());
    }
}

/// Prints `e` as an error.
pub fn error(e: &Error) {
    Diag::of(e).emit(Level::Error);
}

/// Words a message's last clause starts with when it says what to do.
const FIXES: &[&str] = &[
    "add ", "build ", "call ", "change ", "choose ", "convert ", "export ", "give ", "install ", "list ", "move ",
    "pass ", "raise ", "remove ", "rename ", "run ", "save ", "set ", "supply ", "use ", "write ",
];

/// A message whose last `; `-clause says what to do, split into (what, help).
pub fn split_help(message: &str) -> (String, Option<String>) {
    if let Some(i) = message.rfind("; ") {
        let tail = &message[i + 2..];
        if FIXES.iter().any(|w| tail.starts_with(w)) && !tail.contains('\n') {
            return (message[..i].to_string(), Some(tail.to_string()));
        }
    }
    (message.to_string(), None)
}

/// `file`, with `:line:col` of `field` when `file` is a TOML file holding that key path
/// (`package.metadata.mlf.models[0].ram`).
fn with_position(file: &Path, field: Option<&str>) -> String {
    let shown = file.display().to_string();
    let Some(field) = field else { return shown };
    if file.extension().is_none_or(|e| e != "toml") {
        return shown;
    }
    // The package's own manifest, which cargo (or the build) has just read: small, regular.
    let Ok(text) = std::fs::read_to_string(file) else { return shown };
    match toml_position(&text, field) {
        Some((line, col)) => format!("{shown}:{line}:{col}"),
        None => shown,
    }
}

/// The 1-based line and column where the key path `field` stands in the TOML `text`: the
/// deepest part of it that exists (a key's name, an array element's start).
pub fn toml_position(text: &str, field: &str) -> Option<(usize, usize)> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut table = root.get_ref();
    let mut best: Option<std::ops::Range<usize>> = None;
    let mut parts = path_parts(field).into_iter().peekable();
    while let Some(part) = parts.next() {
        let PathPart::Key(key) = part else { break };
        let Some((k, v)) = table.get_key_value(key) else { break };
        best = Some(k.span());
        let mut value = v;
        while let Some(PathPart::Index(i)) = parts.peek() {
            let DeValue::Array(items) = value.get_ref() else { break };
            let Some(item) = items.get(*i) else { break };
            best = Some(item.span());
            value = item;
            parts.next();
        }
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    let start = best?.start.min(text.len());
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Some((line, col))
}

enum PathPart<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[0].c` as keys and indices.
fn path_parts(field: &str) -> Vec<PathPart<'_>> {
    let mut out = Vec::new();
    for segment in field.split('.') {
        let (key, mut rest) = segment.split_once('[').map_or((segment, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(PathPart::Key(key));
        }
        while let Some((index, after)) = rest.split_once(']') {
            if let Ok(i) = index.parse() {
                out.push(PathPart::Index(i));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "[package]\nname = \"x\"\n\n[package.metadata.mlf]\nram = \"1 KiB\"\n\n\
        [[package.metadata.mlf.models]]\npath = \"a.tar\"\n\n[[package.metadata.mlf.models]]\npath = \"b.tar\"\n  ram = \"64 KB\"\n";

    #[test]
    fn keys_have_their_line_and_column() {
        assert_eq!(toml_position(MANIFEST, "package.metadata.mlf.ram"), Some((5, 1)));
        assert_eq!(toml_position(MANIFEST, "package.metadata.mlf.models[1].ram"), Some((12, 3)));
        assert_eq!(toml_position(MANIFEST, "package.metadata.mlf.models[1].path"), Some((11, 1)));
        // A key that is not there: the deepest part that is.
        assert_eq!(
            toml_position(MANIFEST, "package.metadata.mlf.models[0].flash").map(|p| p.0),
            Some(7),
            "the entry's header"
        );
        assert_eq!(toml_position("not = [toml", "not"), None);
    }

    #[test]
    fn cargo_shape_with_and_without_colour() {
        let e = Error::invalid("\"64 KB\" is ambiguous; write \"64 KiB\" or \"64 kB\"")
            .at("package.metadata.mlf.models[1].ram")
            .in_file("Cargo.toml")
            .with_note("KB means 1000 bytes to some and 1024 to others");
        let d = Diag { location: Some("Cargo.toml:12:3 (package.metadata.mlf.models[1].ram)".into()), ..Diag::of(&e) };
        assert_eq!(
            d.render(Level::Error, false),
            "error: \"64 KB\" is ambiguous\n  --> Cargo.toml:12:3 (package.metadata.mlf.models[1].ram)\n\
             help: write \"64 KiB\" or \"64 kB\"\nnote: KB means 1000 bytes to some and 1024 to others\n"
        );
        let coloured = d.render(Level::Error, true);
        assert!(coloured.starts_with("\u{1b}[1m\u{1b}[91merror"), "{coloured:?}");
        assert!(coloured.contains("\u{1b}[0m"), "{coloured:?}");
    }

    #[test]
    fn a_last_clause_that_says_what_to_do_is_the_help() {
        assert_eq!(
            split_help("the folder exists; give another folder"),
            ("the folder exists".into(), Some("give another folder".into()))
        );
        assert_eq!(split_help("a; b is wrong"), ("a; b is wrong".into(), None));
    }
}
