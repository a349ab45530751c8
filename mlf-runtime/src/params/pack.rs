//! What a parameter pack must be for one model: the generated module's `PACK`.

use mlf_pack::PackError;
use mlf_pack::TarError;
use mlf_pack::tar::Name;

use super::{ParamError, ParamErrorKind, ParamRef};

/// What the code requires of a parameter pack, as the generated module states it (`pub static
/// PACK: Pack<N>` beside `PARAMS`): the files it reads, the digest of its interface and
/// parameter table (a pack split from another model, or another version of this one, records
/// another), and the Ed25519 public key packs must be signed with, if the build was given one
/// (`Model::pack_key`, `pack_key = "…"` in `[package.metadata.mlf.models]`).
#[derive(Debug)]
pub struct Pack<const N: usize> {
    /// The model's parameter files (its `PARAMS`).
    pub params: &'static [ParamRef; N],
    /// The model digest.
    pub digest: [u8; 32],
    /// The public key packs must be signed with (`None`: signatures are not checked).
    pub key: Option<[u8; 32]>,
    /// `params`' indices in the order of their identifiers (for finding a member's file).
    order: [u16; N],
}

impl<const N: usize> Pack<N> {
    /// The requirements for `params`, ordered by identifier here (at compile time when used in
    /// a `static`'s initialiser; quadratic in the number of files, so generated modules give the
    /// order with [`Pack::ordered`]).
    ///
    /// # Panics
    /// With more than 65,536 files (a compile error in a `static`).
    pub const fn new(params: &'static [ParamRef; N], digest: [u8; 32], key: Option<[u8; 32]>) -> Self {
        assert!(N <= 1 << 16, "at most 65,536 parameter files");
        let mut order = [0u16; N];
        // Insertion sort (a `const fn` has no `sort`).
        let mut i = 0;
        while i < N {
            let mut j = i;
            while j > 0 && less(params[i].id.as_bytes(), params[order[j - 1] as usize].id.as_bytes()) {
                order[j] = order[j - 1];
                j -= 1;
            }
            order[j] = i as u16;
            i += 1;
        }
        Pack { params, digest, key, order }
    }

    /// [`Pack::new`] with the indices of `params` in the order of their identifiers given (what
    /// the build step computes): checked in linear time.
    ///
    /// # Panics
    /// When `order` does not list every index once, in the order of the identifiers (a compile
    /// error in a `static`).
    pub const fn ordered(
        params: &'static [ParamRef; N],
        digest: [u8; 32],
        key: Option<[u8; 32]>,
        order: [u16; N],
    ) -> Self {
        assert!(N <= 1 << 16, "at most 65,536 parameter files");
        let mut seen = [false; N];
        let mut i = 0;
        while i < N {
            let k = order[i] as usize;
            assert!(k < N && !seen[k], "the order lists every file once");
            seen[k] = true;
            if i > 0 {
                let prev = params[order[i - 1] as usize].id.as_bytes();
                assert!(less(prev, params[k].id.as_bytes()), "the order is by identifier");
            }
            i += 1;
        }
        Pack { params, digest, key, order }
    }

    /// The index in `params` of the file whose member is `name` (`params/<id>.bin`).
    pub(crate) fn find(&self, name: &Name<'_>) -> Option<usize> {
        let mut buf = [0u8; 64];
        let n = name.len();
        if n > buf.len() {
            return None;
        }
        for (b, c) in buf.iter_mut().zip(name.bytes()) {
            *b = c;
        }
        let id = buf[..n].strip_prefix(b"params/")?.strip_suffix(b".bin")?;
        let k = self.order.binary_search_by(|&k| self.params[k as usize].id.as_bytes().cmp(id)).ok()?;
        Some(self.order[k] as usize)
    }

    /// The index of `p` in `params`: `p` itself when it is an entry of `params` (as every
    /// reference the generated code passes is), else the entry with `p`'s identifier.
    pub(crate) fn index_of(&self, p: &ParamRef) -> Option<usize> {
        let offset = (p as *const ParamRef).addr().wrapping_sub(self.params.as_ptr().addr());
        let k = offset / core::mem::size_of::<ParamRef>();
        if k < N && core::ptr::eq(&self.params[k], p) {
            return Some(k);
        }
        let k = self.order.binary_search_by(|&k| self.params[k as usize].id.cmp(p.id)).ok()?;
        let k = self.order[k] as usize;
        (self.params[k] == *p).then_some(k)
    }
}

/// `a < b`, bytewise (a `const fn`).
const fn less(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// The first 4 bytes of a digest, as a number (what messages show).
fn short(d: &[u8; 32]) -> u32 {
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// The error kind of a failed lookup or walk.
pub(crate) fn kind_of(e: TarError) -> ParamErrorKind {
    match e {
        TarError::NotFound => ParamErrorKind::Missing,
        TarError::Duplicate => ParamErrorKind::Duplicate,
        e if e.is_truncation() => ParamErrorKind::ArchiveTruncated,
        _ => ParamErrorKind::ArchiveInvalid,
    }
}

/// The parameter error of a refused pack.
pub(crate) fn pack_error(e: PackError) -> ParamError {
    let header = mlf_pack::header::HEADER_MEMBER;
    match e {
        PackError::Tar(e) => ParamError::new(kind_of(e), "", "pack"),
        PackError::NoHeader | PackError::Header(_) => ParamError::new(ParamErrorKind::PackHeader, "", header),
        PackError::Digest { pack, code } => {
            ParamError::new(ParamErrorKind::ModelMismatch { pack: short(&pack), code: short(&code) }, "", header)
        }
        PackError::Body => ParamError::new(ParamErrorKind::HashMismatch, "", "pack"),
        PackError::Unsigned => ParamError::new(ParamErrorKind::Unsigned, "", mlf_pack::header::SIGNATURE_MEMBER),
        PackError::Signature => ParamError::new(ParamErrorKind::BadSignature, "", mlf_pack::header::SIGNATURE_MEMBER),
    }
}
