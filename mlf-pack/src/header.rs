//! The pack header: the first member of a pack that `cargo mlf pack` writes, `mlf-pack-header`,
//! one 512-byte block that says what a device needs to trust the pack before it reads a
//! parameter from it (all integers little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `mlf-pack` |
//! | 8..12 | format version (1) |
//! | 12..16 | flags: bit 0 = signed (the pack ends with an `mlf-pack-signature` member) |
//! | 16..24 | sequence: which of two packs is newer (A/B slots) |
//! | 24..32 | length: the bytes the header covers, from the pack's first byte to the signature member's header (or the end blocks) |
//! | 32..64 | the model digest: interface and parameter table of the model the pack was split from |
//! | 64..72 | xxh64 of the covered bytes after the header member (`[1024, length)`) |
//! | 72..504 | zero |
//! | 504..512 | xxh64 of the pack's bytes 0..1016: the member's tar header and this block up to here |
//!
//! The signature (Ed25519, 64 bytes: the data of the `mlf-pack-signature` member, whose header
//! starts at `length`) is over bytes `[0, length)` of the pack: the header member's tar header,
//! this block and every member after it.

use crate::tar::{self, TarError};

/// The name of the header member (the pack's first).
pub const HEADER_MEMBER: &str = "mlf-pack-header";
/// The name of the signature member (right after the covered bytes).
pub const SIGNATURE_MEMBER: &str = "mlf-pack-signature";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Where the covered bytes after the header member start: its tar header and its block.
pub const BODY_START: usize = 1024;
const MAGIC: &[u8; 8] = b"mlf-pack";
const FLAG_SIGNED: u32 = 1;

/// What a pack header records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackHeader {
    /// Which of two packs is newer (larger is newer).
    pub sequence: u64,
    /// Bytes covered: `[0, length)` of the pack.
    pub length: u64,
    /// The model digest the pack was split for.
    pub digest: [u8; 32],
    /// xxh64 of `[BODY_START, length)`.
    pub body_xxh64: u64,
    /// Whether an Ed25519 signature follows the covered bytes.
    pub signed: bool,
}

/// Why a pack's header, signature or binding to the code is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackError {
    /// The archive breaks the pack rule.
    Tar(TarError),
    /// The pack has no header member (made before packs had one, or not by `cargo mlf pack`).
    NoHeader,
    /// The header block is damaged or of another format: what is wrong.
    Header(&'static str),
    /// The pack was split from another model (or another version of it).
    Digest {
        /// The digest the pack records.
        pack: [u8; 32],
        /// The digest the code carries.
        code: [u8; 32],
    },
    /// The covered bytes' xxh64 is not the header's: the pack was damaged after it was made.
    Body,
    /// The code requires a signature and the pack has none.
    Unsigned,
    /// The signature is not valid for the covered bytes and the code's public key.
    Signature,
}

impl PackError {
    /// What the error says, in words.
    pub fn what(&self) -> &'static str {
        match self {
            PackError::Tar(e) => e.what(),
            PackError::NoHeader => "the pack has no mlf-pack-header member (pack it again with `cargo mlf pack`)",
            PackError::Header(what) => what,
            PackError::Digest { .. } => "the pack was split from another model or version than this code's",
            PackError::Body => "the pack's bytes do not match its header's hash (damaged after it was packed)",
            PackError::Unsigned => "the pack is not signed, and this code accepts signed packs only",
            PackError::Signature => "the pack's signature is not valid for this code's public key",
        }
    }
}

impl From<TarError> for PackError {
    fn from(e: TarError) -> Self {
        PackError::Tar(e)
    }
}

impl PackHeader {
    /// Writes the header block into `head[512..1024]`, after the header member's tar header in
    /// `head[..512]` (which its hash covers too).
    pub fn encode(&self, head: &mut [u8; 1024]) {
        let b = &mut head[512..];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(if self.signed { FLAG_SIGNED } else { 0 }).to_le_bytes());
        b[16..24].copy_from_slice(&self.sequence.to_le_bytes());
        b[24..32].copy_from_slice(&self.length.to_le_bytes());
        b[32..64].copy_from_slice(&self.digest);
        b[64..72].copy_from_slice(&self.body_xxh64.to_le_bytes());
        b[72..].fill(0);
        let check = xxhash_rust::xxh64::xxh64(&head[..1016], 0);
        head[1016..].copy_from_slice(&check.to_le_bytes());
    }

    /// Reads the header block in `head[512..1024]` (after the header member's tar header),
    /// checking its magic, version, reserved bytes and its hash, which covers the tar header too.
    pub fn decode(head: &[u8; 1024]) -> Result<PackHeader, PackError> {
        let check = u64::from_le_bytes(head[1016..].try_into().expect("8 bytes"));
        if xxhash_rust::xxh64::xxh64(&head[..1016], 0) != check {
            return Err(PackError::Header("the header's hash does not match (damaged)"));
        }
        PackHeader::fields(head[512..].try_into().expect("512 bytes"))
    }

    /// The fields of a header block (its magic, version and reserved bytes checked, not its
    /// hash, which covers the tar header before it: see [`PackHeader::decode`]), for showing a
    /// pack that was checked already.
    pub fn fields(b: &[u8; 512]) -> Result<PackHeader, PackError> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        if &b[0..8] != MAGIC {
            return Err(PackError::Header("the header block does not start with `mlf-pack`"));
        }
        if u32_at(8) != VERSION {
            return Err(PackError::Header("the header is of another format version (update mlf-runtime)"));
        }
        let flags = u32_at(12);
        if flags & !FLAG_SIGNED != 0 || b[72..504].iter().any(|&x| x != 0) {
            return Err(PackError::Header("the header sets flags or bytes this version does not know"));
        }
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&b[32..64]);
        Ok(PackHeader {
            sequence: u64_at(16),
            length: u64_at(24),
            digest,
            body_xxh64: u64_at(64),
            signed: flags & FLAG_SIGNED != 0,
        })
    }

    /// The header of `pack`: `Ok(None)` when its first member is not `mlf-pack-header` (a pack
    /// made before packs had headers), an error when it is and is damaged.
    pub fn of(pack: &[u8]) -> Result<Option<PackHeader>, PackError> {
        let mut it = tar::entries(pack);
        let first = match it.next() {
            None => return Ok(None),
            Some(e) => e?,
        };
        if !first.is_file || !first.name.is(HEADER_MEMBER.as_bytes()) {
            return Ok(None);
        }
        if first.data.len() != 512 {
            return Err(PackError::Header("the header member is not 512 bytes"));
        }
        let head: &[u8; 1024] = pack.first_chunk().expect("a header and 512 bytes of data");
        PackHeader::decode(head).map(Some)
    }
}

/// A pack whose header, binding and signature were checked ([`check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Its header (`None`: a pack without one, accepted only when no key is required).
    pub header: Option<PackHeader>,
    /// Where its members after the header start and the covered bytes end: the members a
    /// reader may use are the entries of `[start, end)`.
    pub members: (usize, usize),
}

/// Checks `pack` once, before any parameter is read from it: the header block (magic, version,
/// its own hash), the covered length, the xxh64 of the covered bytes, the model digest against
/// `digest` (the code's), and, when `key` is given, the Ed25519 signature over the covered bytes.
/// A pack without a header passes only when `key` is `None` and `digest` is `None`.
///
/// What follows the covered bytes may only be the signature member and the end of the archive.
pub fn check(pack: &[u8], digest: Option<&[u8; 32]>, key: Option<&[u8; 32]>) -> Result<Checked, PackError> {
    let Some(h) = PackHeader::of(pack)? else {
        if key.is_some() {
            return Err(PackError::Unsigned);
        }
        if digest.is_some() {
            return Err(PackError::NoHeader);
        }
        return Ok(Checked { header: None, members: (0, pack.len()) });
    };
    let len = usize::try_from(h.length).ok().filter(|&l| l >= BODY_START && l <= pack.len() && l % 512 == 0);
    let len = len.ok_or(PackError::Header("the header's length is not within the pack"))?;
    if let Some(code) = digest {
        if *code != h.digest {
            return Err(PackError::Digest { pack: h.digest, code: *code });
        }
    }
    // What follows the covered bytes: the signature member (when signed), then the end.
    let mut after = tar::entries_from(pack, len);
    let signature = if h.signed {
        match after.next() {
            Some(Ok(e)) if e.is_file && e.name.is(SIGNATURE_MEMBER.as_bytes()) && e.data.len() == 64 => Some(e.data),
            Some(Err(e)) => return Err(PackError::Tar(e)),
            _ => return Err(PackError::Header("the signature member does not follow the covered bytes")),
        }
    } else {
        None
    };
    if let Some(e) = after.next() {
        e?;
        return Err(PackError::Header("a member follows the covered bytes (added after the pack was made)"));
    }
    if xxhash_rust::xxh64::xxh64(&pack[BODY_START..len], 0) != h.body_xxh64 {
        return Err(PackError::Body);
    }
    if let Some(key) = key {
        let sig = signature.ok_or(PackError::Unsigned)?;
        if !crate::sign::verify(&pack[..len], sig, key) {
            return Err(PackError::Signature);
        }
    }
    Ok(Checked { header: Some(h), members: (BODY_START, len) })
}

impl Checked {
    /// The members a reader may use: the entries of the covered bytes after the header (every
    /// entry of a pack without one). An entry running past the covered bytes is an error.
    pub fn entries<'a>(&self, pack: &'a [u8]) -> Covered<'a> {
        Covered { inner: tar::entries_from(pack, self.members.0), end: self.members.1, done: false }
    }
}

/// The entries of a checked pack's covered bytes ([`Checked::entries`]).
#[derive(Clone, Debug)]
pub struct Covered<'a> {
    inner: tar::Entries<'a>,
    end: usize,
    done: bool,
}

impl<'a> Iterator for Covered<'a> {
    type Item = Result<tar::Entry<'a>, PackError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.inner.offset() == self.end {
            return None;
        }
        let item = match self.inner.next()? {
            Ok(_) if self.inner.offset() > self.end => {
                Err(PackError::Header("a member runs past the bytes the header covers"))
            }
            Ok(e) => Ok(e),
            Err(e) => Err(PackError::Tar(e)),
        };
        self.done = item.is_err();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_and_any_flipped_byte_is_refused() {
        let h = PackHeader { sequence: 7, length: 4096, digest: [3; 32], body_xxh64: 99, signed: true };
        let mut b = [0u8; 1024];
        assert!(tar::write_header(HEADER_MEMBER.as_bytes(), 512, (&mut b[..512]).try_into().unwrap()));
        h.encode(&mut b);
        assert_eq!(PackHeader::decode(&b), Ok(h));
        assert_eq!(PackHeader::of(&b), Ok(Some(h)));
        for i in 0..1024 {
            let mut d = b;
            d[i] ^= 0xff;
            assert!(PackHeader::decode(&d).is_err(), "byte {i}");
        }
    }
}
