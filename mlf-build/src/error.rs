//! The one build-time error type: every error names the file, the member inside it and the field.

use std::fmt;
use std::path::Path;

/// Result alias used throughout `mlf-build`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A build-time error with its location: the file on disk, the member inside an archive, and the
/// field inside that member.
///
/// Displayed as `model.tar: metadata.json: modules.default.memory: expected an object`.
#[derive(Debug)]
pub struct Error {
    /// The file on disk (archive, directory or kmodel) the error is about (boxed: a `Result`
    /// stays small).
    pub file: Option<Box<Path>>,
    /// The member inside the archive (`metadata.json`, `codegen/host/src/default_lib0.c`, …).
    pub member: Option<String>,
    /// The field inside the member (`modules.default.memory`, `nodes[3].inputs[1]`, …).
    pub field: Option<String>,
    /// What went wrong.
    pub kind: ErrorKind,
    /// What to do about it and why, when the message does not say it ([`Error::help`],
    /// [`Error::note`]); boxed, so that a `Result` stays small.
    pub advice: Option<Box<Advice>>,
}

/// What to do about an error, and why (`cargo mlf` prints them on `help:` and `note:` lines;
/// the one-line form appends each after `; `).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Advice {
    /// What to do.
    pub help: Option<String>,
    /// Why, or a remark.
    pub note: Option<String>,
}

/// What went wrong, without the location.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading a file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file is not a tar archive, a directory, or another recognised format.
    #[error("not a recognised model file: {0}")]
    UnknownFormat(String),
    /// The tar archive is damaged or truncated.
    #[error("corrupt or truncated tar archive: {0}")]
    CorruptTar(String),
    /// A tar member's path is absolute, contains `..` or a NUL byte.
    #[error("unsafe member path {} (absolute, `..` or NUL): refusing to read it", shown(.0))]
    UnsafePath(String),
    /// A tar member or a file is a symbolic link, hard link, FIFO, device or other non-regular file.
    #[error("{} is a {what}; only regular files{} are allowed", shown(name), if what == &"directory" { "" } else { " and directories" })]
    NotARegularFile {
        /// The member's name.
        name: String,
        /// What kind of entry it is.
        what: &'static str,
    },
    /// A file or member is larger than the reader accepts.
    #[error("{what} is {size} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// What is too large.
        what: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A required member is missing from the archive.
    #[error("missing {0}")]
    Missing(String),
    /// JSON could not be parsed.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// `metadata.json` has a version this reader does not know.
    #[error("unsupported metadata version {0} (this reader knows versions 1 to 7)")]
    UnsupportedVersion(i64),
    /// The archive is an operator-style MLF (from `tvm.build`), not a model.
    #[error(
        "this is an operator-style MLF (exported from tvm.build): a bag of operators with no executor, not a model; export the model with relay.build and tvm.micro.export_model_library_format"
    )]
    OperatorStyle,
    /// A v7 archive holds several modules and none was chosen (the message lists them and says
    /// how to choose one in each place a model is named).
    #[error(
        "the archive holds several modules ({0}); choose one by name: `--module NAME` for cargo mlf, \
         `.module(\"NAME\")` in build.rs, `module = \"NAME\"` in include_model! or in [package.metadata.mlf]"
    )]
    AmbiguousModule(String),
    /// The chosen module does not exist.
    #[error("no module named {name:?}; the archive holds: {available}")]
    NoSuchModule {
        /// The requested name.
        name: String,
        /// The names present.
        available: String,
    },
    /// A field has the wrong type or an impossible value.
    #[error("{0}")]
    Invalid(String),
    /// A binary structure ends before a length it declares.
    #[error(
        "truncated: {}needs {needed} bytes at offset {offset}, but only {available} remain",
        count.map(|n| format!("a count of {n} items ")).unwrap_or_default()
    )]
    Truncated {
        /// Offset where the read started.
        offset: u64,
        /// Bytes the read needs.
        needed: u64,
        /// Bytes left.
        available: u64,
        /// The item count read at `offset`, when the bytes are those a count needs.
        count: Option<u64>,
    },
    /// A magic number does not match.
    #[error("bad magic {found:#018x}, expected {expected:#018x}")]
    BadMagic {
        /// The value found.
        found: u64,
        /// The value expected.
        expected: u64,
    },
    /// Two counts or sizes that must agree do not.
    #[error("{0}")]
    Mismatch(String),
    /// A data type that this operation cannot handle.
    #[error("unsupported dtype {0}")]
    UnsupportedDtype(String),
    /// A feature of the model that cannot be built or run here.
    #[error("{0}")]
    Unsupported(String),
    /// A kmodel is damaged or cannot be run (the runtime parser's error, which says which part
    /// and why).
    #[error("{0}")]
    Kmodel(mlf_kmodel::KmodelError),
    /// A model, or a crate's models together, need more memory than a budget of
    /// `[package.metadata.mlf]` allows (the message names the model, the need and the budget).
    #[error("{0}")]
    OverBudget(String),
}

impl Error {
    /// A new error with no location yet.
    pub fn new(kind: ErrorKind) -> Self {
        Error { file: None, member: None, field: None, kind, advice: None }
    }

    /// Shorthand for [`ErrorKind::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Invalid(msg.into()))
    }

    /// Shorthand for [`ErrorKind::Unsupported`].
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unsupported(msg.into()))
    }

    /// Shorthand for [`ErrorKind::Mismatch`].
    pub fn mismatch(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Mismatch(msg.into()))
    }

    /// Shorthand for [`ErrorKind::Missing`].
    pub fn missing(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::Missing(what.into()))
    }

    /// Sets what to do about the error (printed as `help:` by `cargo mlf`).
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.advice.get_or_insert_default().help = Some(help.into());
        self
    }

    /// Sets a remark on the error (printed as `note:` by `cargo mlf`).
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.advice.get_or_insert_default().note = Some(note.into());
        self
    }

    /// What to do about the error, when it says.
    pub fn help(&self) -> Option<&str> {
        self.advice.as_ref()?.help.as_deref()
    }

    /// A remark on the error (why), when it has one.
    pub fn note(&self) -> Option<&str> {
        self.advice.as_ref()?.note.as_deref()
    }

    /// The message without the location, help or note.
    pub fn message(&self) -> String {
        capped_message(&self.kind.to_string())
    }

    /// Sets the file unless one is set already.
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.as_ref().into());
        }
        self
    }

    /// Sets the archive member unless one is set already.
    pub fn in_member(mut self, member: impl Into<String>) -> Self {
        if self.member.is_none() {
            self.member = Some(member.into());
        }
        self
    }

    /// Prefixes the field path with `outer` (`outer.inner`, or `outer[3]` style when `inner`
    /// starts with `[`).
    pub fn at(mut self, outer: impl fmt::Display) -> Self {
        let outer = outer.to_string();
        self.field = Some(match self.field.take() {
            None => outer,
            Some(inner) if inner.starts_with('[') => format!("{outer}{inner}"),
            Some(inner) => format!("{outer}.{inner}"),
        });
        self
    }
}

/// Longest name (member, field, identifier) an error echoes whole; longer ones are cut in the
/// middle with their length said.
pub const MAX_SHOWN: usize = 200;

/// `name` quoted, cut in the middle when it is longer than [`MAX_SHOWN`] bytes (a hostile archive
/// can name a member with a megabyte).
pub fn shown(name: &str) -> String {
    format!("{:?}", Capped(name))
}

/// A name to echo: whole when short, else its start and end with its length.
struct Capped<'a>(&'a str);

impl fmt::Display for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.len() <= MAX_SHOWN {
            return f.write_str(s);
        }
        let head = floor(s, MAX_SHOWN / 2);
        let tail = ceil(s, s.len() - MAX_SHOWN / 4);
        write!(f, "{}…[{} bytes in all]…{}", &s[..head], s.len(), &s[tail..])
    }
}

impl fmt::Debug for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.len() <= MAX_SHOWN {
            return write!(f, "{s:?}");
        }
        let head = floor(s, MAX_SHOWN / 2);
        let tail = ceil(s, s.len() - MAX_SHOWN / 4);
        write!(f, "{:?}…[{} bytes in all]…{:?}", &s[..head], s.len(), &s[tail..])
    }
}

/// The largest char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Longest message an error prints: what a reader puts in it (lists of names, a line of C) is cut
/// in the middle beyond this.
const MAX_MESSAGE: usize = 4096;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", Capped(&file.display().to_string()))?;
        }
        if let Some(member) = &self.member {
            write!(f, "{}: ", Capped(member))?;
        }
        if let Some(field) = &self.field {
            write!(f, "{}: ", Capped(field))?;
        }
        f.write_str(&self.message())?;
        for extra in [self.help(), self.note()].into_iter().flatten() {
            write!(f, "; {extra}")?;
        }
        Ok(())
    }
}

/// `message`, cut in the middle beyond [`MAX_MESSAGE`] bytes.
fn capped_message(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    let head = floor(message, MAX_MESSAGE / 2);
    let tail = ceil(message, message.len() - MAX_MESSAGE / 4);
    format!("{}…[message of {} bytes cut]…{}", &message[..head], message.len(), &message[tail..])
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io(e))
    }
}

/// Adds location context to results.
pub trait Context<T> {
    /// Sets the file on an error.
    fn in_file(self, file: impl AsRef<Path>) -> Result<T>;
    /// Sets the member on an error.
    fn in_member(self, member: impl Into<String>) -> Result<T>;
    /// Prefixes the field path on an error.
    fn at(self, field: impl fmt::Display) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    fn in_file(self, file: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| e.in_file(file))
    }
    fn in_member(self, member: impl Into<String>) -> Result<T> {
        self.map_err(|e| e.in_member(member))
    }
    fn at(self, field: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.at(field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_member_and_field() {
        let e = Error::invalid("expected an object")
            .at("memory")
            .at("modules.default")
            .in_member("metadata.json")
            .in_file("model.tar");
        assert_eq!(e.to_string(), "model.tar: metadata.json: modules.default.memory: expected an object");
    }

    #[test]
    fn long_names_are_cut() {
        let name = "a".repeat(1 << 20);
        let e = Error::new(ErrorKind::UnsafePath(name.clone())).in_member(name.clone()).at(name);
        let text = e.to_string();
        assert!(text.len() < 6000, "{} bytes", text.len());
        assert!(text.contains("[1048576 bytes in all]"), "{text}");
        assert_eq!(shown("short"), "\"short\"");
    }

    #[test]
    fn index_fields_join_without_dot() {
        let e = Error::invalid("x").at("[3]").at("nodes");
        assert_eq!(e.field.as_deref(), Some("nodes[3]"));
    }
}
