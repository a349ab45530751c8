//! External parameters: weights kept outside the program image, named in the generated code only
//! by a short content-derived identifier, and read at run time through a [`ParamSource`].
//!
//! Sources: [`FlashArchive`] (a packed archive in memory or a flash partition, `no_std`),
//! [`Slots`] (the newer valid pack of two flash slots), and with `std`, [`Folder`] (a split
//! folder with its `configure.json`) and [`PackedArchive`] (the packed tar on disk). A pack is
//! checked once when it is opened against the generated module's [`Pack`]: its header, the
//! digest binding it to the code, and its signature when the code carries a public key. Every read is checked against the size and the xxh64 hash the generated code
//! carries. A model whose parameters are loaded lazily records which files it has read in a
//! [`Loaded`] set.

use crate::message::Message;

mod flash;
#[cfg(feature = "std")]
mod folder;
mod loaded;
mod pack;
mod slots;

pub use flash::FlashArchive;
#[cfg(feature = "std")]
pub use folder::{Folder, PackedArchive};
pub(crate) use loaded::Bits;
pub use loaded::Loaded;
pub use mlf_pack::PackHeader;
pub use pack::Pack;
pub use slots::{NoValidSlot, Slot, Slots};

/// A parameter as the generated code knows it: identifier, size, hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamRef {
    /// Content-derived identifier (`p` + 16 hex digits of the content's xxh64 …).
    pub id: &'static str,
    /// Size in bytes.
    pub bytes: usize,
    /// xxh64 (seed 0) of the bytes.
    pub xxh64: u64,
}

/// Why a parameter could not be supplied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamErrorKind {
    /// The configuration does not know the identifier.
    UnknownId,
    /// The file (or archive member) the configuration names does not exist.
    Missing,
    /// The data has another size than the generated code expects.
    SizeMismatch {
        /// Expected bytes (saturated at `u32::MAX`).
        expected: u32,
        /// Bytes found (saturated at `u32::MAX`).
        found: u32,
    },
    /// The data's hash differs from the one the generated code carries.
    HashMismatch,
    /// `configure.json` is missing.
    ConfigMissing,
    /// `configure.json` is not what `cargo mlf split` writes.
    ConfigMalformed,
    /// The archive ends inside a header or a member.
    ArchiveTruncated,
    /// A header of the archive is damaged, or is an entry a parameter pack must not have (PAX or
    /// GNU extension headers, links, devices): see the pack rule in `cargo mlf pack`'s docs.
    ArchiveInvalid,
    /// The archive holds the member more than once (a pack names every member once).
    Duplicate,
    /// Reading failed (I/O error).
    Io,
    /// [`Model::load`](crate) was not called before `run` (resident placement).
    NotLoaded,
    /// The pack header (`mlf-pack-header`) is missing, damaged or of another format.
    PackHeader,
    /// The pack was split from another model, or another version of this one: the first 4 bytes
    /// of each digest (`cargo mlf inspect` shows a pack's whole digest; the generated module's
    /// `PACK.digest` is the code's).
    ModelMismatch {
        /// The digest the pack records.
        pack: u32,
        /// The digest the code carries.
        code: u32,
    },
    /// The code requires signed packs and the pack is not signed.
    Unsigned,
    /// The pack's signature is not valid for the code's public key (signed by someone else, or
    /// changed since).
    BadSignature,
}

/// A parameter error: what, which identifier, and which path (file, member or configuration).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ParamError {
    /// What went wrong.
    pub kind: ParamErrorKind,
    /// The identifier.
    pub id: Message,
    /// The path involved (file, archive member or configuration file).
    pub path: Message,
}

impl ParamError {
    /// A new error (a long path keeps its end).
    pub fn new(kind: ParamErrorKind, id: &str, path: &str) -> Self {
        ParamError { kind, id: Message::new(id), path: Message::tail(path) }
    }

    /// A size mismatch.
    pub fn size(expected: usize, found: usize, id: &str, path: &str) -> Self {
        let s = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self::new(ParamErrorKind::SizeMismatch { expected: s(expected), found: s(found) }, id, path)
    }
}

impl core::fmt::Debug for ParamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for ParamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.kind {
            ParamErrorKind::UnknownId => "unknown parameter identifier",
            ParamErrorKind::Missing => "parameter file missing",
            ParamErrorKind::SizeMismatch { .. } => "parameter size mismatch",
            ParamErrorKind::HashMismatch => "parameter hash mismatch (the file was changed or damaged)",
            ParamErrorKind::ConfigMissing => "configuration missing",
            ParamErrorKind::ConfigMalformed => "configuration malformed",
            ParamErrorKind::ArchiveTruncated => "parameter archive truncated",
            ParamErrorKind::ArchiveInvalid => {
                "parameter archive invalid (a damaged header, or a PAX/GNU extension, link or device entry)"
            }
            ParamErrorKind::Duplicate => "parameter archive holds the member more than once",
            ParamErrorKind::Io => "reading the parameter failed",
            ParamErrorKind::NotLoaded => "parameters not loaded (call Model::load first)",
            ParamErrorKind::PackHeader => {
                "parameter pack header missing or damaged (pack it again with `cargo mlf pack`)"
            }
            ParamErrorKind::ModelMismatch { .. } => "parameter pack made for another model or version",
            ParamErrorKind::Unsigned => "parameter pack not signed (this code accepts signed packs only)",
            ParamErrorKind::BadSignature => "parameter pack signature not valid for this code's public key",
        };
        // Errors of the whole pack or of `configure.json` concern no one parameter: no identifier.
        if self.id.as_str().is_empty() {
            write!(f, "{what}: path {:?}", self.path.as_str())?;
        } else {
            write!(f, "{what}: identifier {:?}, path {:?}", self.id.as_str(), self.path.as_str())?;
        }
        if let ParamErrorKind::SizeMismatch { expected, found } = self.kind {
            write!(f, " ({found} bytes, expected {expected})")?;
        }
        if let ParamErrorKind::ModelMismatch { pack, code } = self.kind {
            write!(
                f,
                " (the pack's model digest {pack:08x}…, this code's {code:08x}…: split the model this code was built from, and pack it)"
            )?;
        }
        Ok(())
    }
}

/// Where parameters come from at run time. Firmware implements it for its own storage (a flash
/// partition, an SD card); mlf provides [`FlashArchive`], and with `std` [`Folder`] and
/// [`PackedArchive`].
pub trait ParamSource {
    /// Copies parameter `p` into `buf` (`buf.len() == p.bytes`). Implementations check that the
    /// stored size is `p.bytes`; [`ParamSource::load`] checks the hash.
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError>;

    /// Where `p` is read from (for messages).
    fn path_of(&self, p: &ParamRef) -> Message;

    /// Reads `p` into `buf` and checks its hash.
    fn load(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        if buf.len() != p.bytes {
            return Err(ParamError::size(p.bytes, buf.len(), p.id, self.path_of(p).as_str()));
        }
        self.read(p, buf)?;
        if xxh64(buf) != p.xxh64 {
            return Err(ParamError::new(ParamErrorKind::HashMismatch, p.id, self.path_of(p).as_str()));
        }
        Ok(())
    }
}

impl<S: ParamSource + ?Sized> ParamSource for &mut S {
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        (**self).read(p, buf)
    }
    fn path_of(&self, p: &ParamRef) -> Message {
        (**self).path_of(p)
    }
}

/// The hash every parameter is checked with (xxh64, seed 0).
pub fn xxh64(data: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(data, 0)
}

/// The member name of a parameter in a split folder or packed archive (`params/<id>.bin`).
pub fn member_name(id: &str, buf: &mut [u8; 64]) -> usize {
    let parts: [&[u8]; 3] = [b"params/", id.as_bytes(), b".bin"];
    let mut n = 0;
    for part in parts {
        let take = part.len().min(buf.len() - n);
        buf[n..n + take].copy_from_slice(&part[..take]);
        n += take;
    }
    n
}
