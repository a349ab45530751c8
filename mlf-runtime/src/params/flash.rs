//! A packed parameter archive held in memory or mapped from a flash partition (`no_std`).

use mlf_pack::tar::{self, TarError};

use super::pack::{Pack, kind_of, pack_error};
use super::{ParamError, ParamErrorKind, ParamRef, ParamSource, member_name};
use crate::message::Message;

/// The archive `cargo mlf pack` writes, as bytes in memory or flash (usually `&'static [u8]`).
///
/// Two ways to open one:
///
/// - [`FlashArchive::open`] with the generated module's [`Pack`] (`FlashArchive::open(bytes,
///   &model::PACK)`): the pack is checked once — its header, the digest binding it to this code,
///   the signature when the code carries a public key, every tar header, and every parameter the
///   model reads present once with its size — and an index of where each parameter lies is kept
///   (`N` offsets, sized by the module), so every read is one lookup, whatever the number of
///   files.
/// - [`FlashArchive::new`]: any pack (also one made before packs had headers), every header
///   checked once; each read then looks its member up by walking the archive (time linear in the
///   number of files, every header checked again).
///
/// Identifiers are resolved to the members `params/<id>.bin` that the configuration names (`cargo
/// mlf pack` refuses a folder whose `configure.json` maps an identifier anywhere else, so the
/// member name is the configuration's answer and no JSON is parsed on the device). Parameters can
/// also be used in place with [`FlashArchive::bytes`].
#[derive(Clone, Copy, Debug)]
pub struct FlashArchive<'a, const N: usize = 0> {
    data: &'a [u8],
    pack: Option<&'a Pack<N>>,
    /// Where the data of each file of `pack.params` starts in `data`.
    at: [usize; N],
    header: Option<mlf_pack::PackHeader>,
}

impl<'a> FlashArchive<'a> {
    /// The archive in `data`. Checks every header against the pack rule (see `mlf_pack::tar`:
    /// plain ustar entries only, valid checksums, plain member names) and that it holds one
    /// `configure.json`. Reads walk the archive; [`FlashArchive::open`] checks more and reads in
    /// constant time.
    pub fn new(data: &'a [u8]) -> Result<Self, ParamError> {
        match tar::find(data, b"configure.json") {
            Ok(_) => Ok(FlashArchive { data, pack: None, at: [], header: None }),
            Err(TarError::NotFound) => Err(ParamError::new(ParamErrorKind::ConfigMissing, "", "configure.json")),
            Err(e) => Err(ParamError::new(kind_of(e), "", "configure.json")),
        }
    }
}

impl<'a, const N: usize> FlashArchive<'a, N> {
    /// Opens the pack in `data` for the model whose [`Pack`] is `pack` (the generated module's
    /// `PACK`), checking it once before any parameter is read:
    ///
    /// - the pack rule for every header up to the end of what the pack header covers, and
    ///   nothing after it but the signature;
    /// - the pack header (`mlf-pack-header`: its own hash, the covered length, the xxh64 of the
    ///   covered bytes), and the model digest it records against the code's
    ///   ([`ParamErrorKind::ModelMismatch`] names both);
    /// - when the code carries a public key, the Ed25519 signature over the covered bytes
    ///   ([`ParamErrorKind::Unsigned`], [`ParamErrorKind::BadSignature`]);
    /// - every file of `pack.params` present once (`Missing`, `Duplicate`) with its size.
    ///
    /// Hashes of the files are checked as they are read ([`ParamSource::load`]).
    pub fn open(data: &'a [u8], pack: &'a Pack<N>) -> Result<Self, ParamError> {
        let checked = mlf_pack::check(data, Some(&pack.digest), pack.key.as_ref()).map_err(pack_error)?;
        let mut at = [usize::MAX; N];
        for entry in checked.entries(data) {
            let e = entry.map_err(pack_error)?;
            let Some(k) = e.is_file.then(|| pack.find(&e.name)).flatten() else { continue };
            let p = &pack.params[k];
            let mut name = [0u8; 64];
            let path = path_str(p, &mut name);
            if at[k] != usize::MAX {
                return Err(ParamError::new(ParamErrorKind::Duplicate, p.id, path));
            }
            if e.data.len() != p.bytes {
                return Err(ParamError::size(p.bytes, e.data.len(), p.id, path));
            }
            at[k] = e.data_at();
        }
        if let Some(k) = at.iter().position(|&a| a == usize::MAX) {
            let p = &pack.params[k];
            let mut name = [0u8; 64];
            return Err(ParamError::new(ParamErrorKind::Missing, p.id, path_str(p, &mut name)));
        }
        Ok(FlashArchive { data, pack: Some(pack), at, header: checked.header })
    }

    /// The pack's header (`None` for a pack opened with [`FlashArchive::new`] or made before packs
    /// had one).
    pub fn header(&self) -> Option<mlf_pack::PackHeader> {
        self.header
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
        if let Some(pack) = self.pack {
            let k = pack.index_of(p).ok_or_else(|| ParamError::new(ParamErrorKind::UnknownId, p.id, "PACK"))?;
            let at = self.at[k];
            // Sizes were checked when the pack was opened.
            return Ok(&self.data[at..at + p.bytes]);
        }
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

/// `params/<id>.bin` of `p`, in `buf`.
fn path_str<'b>(p: &ParamRef, buf: &'b mut [u8; 64]) -> &'b str {
    let n = member_name(p.id, buf);
    core::str::from_utf8(&buf[..n]).unwrap_or("")
}

impl<const N: usize> ParamSource for FlashArchive<'_, N> {
    /// Copies the member (size-checked; [`ParamSource::load`] checks the hash once).
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        buf.copy_from_slice(self.locate(p)?);
        Ok(())
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        let mut name = [0u8; 64];
        Message::new(path_str(p, &mut name))
    }
}
