//! A packed parameter archive held in memory or mapped from a flash partition (`no_std`).

use super::tar::{self, TarError};
use super::{ParamError, ParamErrorKind, ParamRef, ParamSource, member_name};
use crate::message::Message;

/// The archive `cargo mlf pack` writes, as bytes in memory or flash (usually `&'static [u8]`).
///
/// Identifiers are resolved to the members `params/<id>.bin` that the configuration names (`cargo
/// mlf pack` refuses a folder whose `configure.json` maps an identifier anywhere else, so the
/// member name is the configuration's answer and no JSON is parsed on the device). Parameters can
/// also be used in place with [`FlashArchive::bytes`].
#[derive(Clone, Copy, Debug)]
pub struct FlashArchive<'a> {
    data: &'a [u8],
}

impl<'a> FlashArchive<'a> {
    /// The archive in `data`. Checks every header against the pack rule (see the `tar` module:
    /// plain ustar entries only, valid checksums) and that it holds one `configure.json`.
    pub fn new(data: &'a [u8]) -> Result<Self, ParamError> {
        match tar::find(data, b"configure.json") {
            Ok(_) => Ok(FlashArchive { data }),
            Err(TarError::NotFound) => Err(ParamError::new(ParamErrorKind::ConfigMissing, "", "configure.json")),
            Err(e) => Err(ParamError::new(kind_of(e), "", "configure.json")),
        }
    }

    /// The bytes of parameter `p` inside the archive, checked for size and hash.
    pub fn bytes(&self, p: &ParamRef) -> Result<&'a [u8], ParamError> {
        let data = self.locate(p)?;
        if super::xxh64(data) != p.xxh64 {
            return Err(ParamError::new(ParamErrorKind::HashMismatch, p.id, self.path_of(p).as_str()));
        }
        Ok(data)
    }

    /// The bytes of parameter `p` inside the archive, checked for size only.
    fn locate(&self, p: &ParamRef) -> Result<&'a [u8], ParamError> {
        let mut name = [0u8; 64];
        let n = member_name(p.id, &mut name);
        let path = core::str::from_utf8(&name[..n]).unwrap_or("");
        let m = tar::find(self.data, &name[..n]).map_err(|e| ParamError::new(kind_of(e), p.id, path))?;
        if m.data.len() != p.bytes {
            return Err(ParamError::size(p.bytes, m.data.len(), p.id, path));
        }
        Ok(m.data)
    }
}

/// The error kind of a failed lookup.
pub(crate) fn kind_of(e: TarError) -> ParamErrorKind {
    match e {
        TarError::Truncated => ParamErrorKind::ArchiveTruncated,
        TarError::Invalid => ParamErrorKind::ArchiveInvalid,
        TarError::Duplicate => ParamErrorKind::Duplicate,
        TarError::NotFound => ParamErrorKind::Missing,
    }
}

impl ParamSource for FlashArchive<'_> {
    /// Copies the member (size-checked; [`ParamSource::load`] checks the hash once).
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        buf.copy_from_slice(self.locate(p)?);
        Ok(())
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        let mut name = [0u8; 64];
        let n = member_name(p.id, &mut name);
        Message::new(core::str::from_utf8(&name[..n]).unwrap_or(""))
    }
}
