//! **The pack rule**, applied by every reader of packs (`cargo mlf pack` and `inspect`, the host's
//! `PackedArchive`, the device's `FlashArchive`): a pack is a sequence of plain ustar (or v7)
//! headers, each with a valid checksum, ended by a zero block or the end of the data. Members are
//! regular files (type `0` or NUL) and directories (`5`, skipped); any other entry — PAX extended
//! headers (`x`, `g`), GNU long names (`L`, `K`), links, devices — makes the pack invalid, because
//! a reader that ignored it would read another member than one that applied it.
//!
//! **The name rule** ([`member_name`], the one function every reader uses): a member's name is
//! the ustar prefix (POSIX headers only; GNU headers keep times there) and the name field joined
//! by `/`, without leading `.` components (`./params/x.bin`, a prefix `.` or `./` and a name
//! `params/x.bin` are all `params/x.bin`). What is left must be plain: no empty, `.` or `..`
//! component, no `\`, not absolute (a directory may end with one `/`); anything else makes the
//! pack invalid, so no two readers can disagree on which member a name is. A name occurring
//! twice makes the pack invalid for that name: there is no "first copy" or "last copy".

/// Why a pack (or a lookup in it) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarError {
    /// The archive ends inside a header.
    HeaderTruncated,
    /// A member claims `size` bytes, past the end of the archive.
    DataTruncated {
        /// The bytes the header claims.
        size: usize,
    },
    /// A header's checksum is not the one it records.
    Checksum,
    /// A header's size field is not an octal number.
    Size,
    /// An entry of a type the pack rule refuses (PAX, GNU, link, device …): the type byte.
    EntryType(u8),
    /// A member name that is not plain (see the module's name rule).
    Name,
    /// The member occurs more than once.
    Duplicate,
    /// The member is not in the archive.
    NotFound,
}

impl TarError {
    /// Whether the archive ends too early (else it is invalid).
    pub fn is_truncation(self) -> bool {
        matches!(self, TarError::HeaderTruncated | TarError::DataTruncated { .. })
    }

    /// What the error says, in words.
    pub fn what(self) -> &'static str {
        match self {
            TarError::HeaderTruncated => "the pack ends inside a header",
            TarError::DataTruncated { .. } => "a member runs past the end of the pack",
            TarError::Checksum => "a header has a wrong checksum",
            TarError::Size => "a header has no valid size",
            TarError::EntryType(b'x' | b'g') => "a PAX extended header",
            TarError::EntryType(b'L' | b'K') => "a GNU long name",
            TarError::EntryType(b'1' | b'2') => "a link",
            TarError::EntryType(_) => "an entry that is not a regular file or directory",
            TarError::Name => "a member name that is not plain (no empty, `.` or `..` component, no `\\`)",
            TarError::Duplicate => "a member name occurring more than once",
            TarError::NotFound => "no such member",
        }
    }
}

/// A member's name as the name rule reads it: `prefix/name`, or `name` when `prefix` is empty,
/// both without leading `.` components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name<'a> {
    prefix: &'a [u8],
    name: &'a [u8],
}

impl<'a> Name<'a> {
    /// Whether the name is `wanted`.
    pub fn is(&self, wanted: &[u8]) -> bool {
        if self.prefix.is_empty() {
            return self.name == wanted;
        }
        let p = self.prefix;
        wanted.len() == p.len() + 1 + self.name.len()
            && wanted.starts_with(p)
            && wanted[p.len()] == b'/'
            && &wanted[p.len() + 1..] == self.name
    }

    /// The name in bytes: the prefix, `/` and the name (or the name alone).
    pub fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        let slash: &'a [u8] = if self.prefix.is_empty() { b"" } else { b"/" };
        self.prefix.iter().chain(slash).chain(self.name).copied()
    }

    /// Bytes of the name.
    pub fn len(&self) -> usize {
        if self.prefix.is_empty() { self.name.len() } else { self.prefix.len() + 1 + self.name.len() }
    }

    /// Whether the name is empty (the archive's root directory, `./`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The octal number of a numeric header field (leading spaces or NULs, then digits, then a
/// space or NUL); `None` for anything else or an overflow.
pub fn octal(field: &[u8]) -> Option<usize> {
    let mut n: usize = 0;
    let mut seen = false;
    for &b in field {
        match b {
            b'0'..=b'7' => {
                n = n.checked_mul(8)?.checked_add((b - b'0') as usize)?;
                seen = true;
            }
            b' ' | 0 if !seen => {}
            b' ' | 0 => break,
            _ => return None,
        }
    }
    seen.then_some(n)
}

/// Whether the header's checksum (the sum of its bytes, the checksum field read as spaces) is
/// the one it records.
pub fn checksum_ok(header: &[u8; 512]) -> bool {
    let sum: usize =
        header.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { b as usize }).sum();
    octal(&header[148..156]) == Some(sum)
}

/// The bytes of a NUL-terminated header field.
pub fn field(f: &[u8]) -> &[u8] {
    &f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]
}

/// `n` without leading `./` (and a lone `.`).
fn strip_dots(mut n: &[u8]) -> &[u8] {
    while let Some(rest) = n.strip_prefix(b"./") {
        n = rest;
    }
    if n == b"." { b"" } else { n }
}

/// Whether every `/`-separated component of `n` is plain: not empty, `.` or `..`, and no `\`.
/// `trailing_slash`: one empty last component is allowed (a directory's `name/`).
fn plain(n: &[u8], trailing_slash: bool) -> bool {
    let n = if trailing_slash { n.strip_suffix(b"/").unwrap_or(n) } else { n };
    !n.contains(&b'\\') && n.split(|&b| b == b'/').all(|c| !c.is_empty() && c != b"." && c != b"..")
}

/// **The name rule**: the name of the member whose header is `header` (see the module's docs),
/// or [`TarError::Name`]. A directory (`dir`) may end with `/`; an empty name is the root
/// directory, which a file cannot be.
pub fn member_name(header: &[u8; 512], dir: bool) -> Result<Name<'_>, TarError> {
    // The prefix field exists in POSIX ustar headers only (GNU headers keep times there).
    let prefix = if &header[257..263] == b"ustar\0" { strip_dots(field(&header[345..500])) } else { &[] };
    let name = field(&header[..100]);
    let name = if prefix.is_empty() { strip_dots(name) } else { name };
    let n = Name { prefix, name };
    if n.is_empty() {
        return if dir { Ok(n) } else { Err(TarError::Name) };
    }
    let prefix_ok = prefix.is_empty() || plain(prefix, false);
    if !prefix_ok || name.is_empty() && !prefix.is_empty() || !plain(name, dir) {
        return Err(TarError::Name);
    }
    Ok(n)
}

/// One entry: where its header is, its name and its data.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    /// Offset of its header in the archive.
    pub at: usize,
    /// Its name (the name rule's).
    pub name: Name<'a>,
    /// The member's bytes.
    pub data: &'a [u8],
    /// Whether it is a regular file (else a directory).
    pub is_file: bool,
}

impl Entry<'_> {
    /// Offset of the member's data in the archive.
    pub fn data_at(&self) -> usize {
        self.at + 512
    }
}

/// The entries of `archive` in order, each checked against the pack rule; iteration stops at
/// the first error ([`Entries::offset`] says where).
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    archive: &'a [u8],
    pos: usize,
    done: bool,
}

/// The entries of `archive`.
pub fn entries(archive: &[u8]) -> Entries<'_> {
    Entries { archive, pos: 0, done: false }
}

/// The entries of `archive` from offset `pos` (a header boundary).
pub fn entries_from(archive: &[u8], pos: usize) -> Entries<'_> {
    Entries { archive, pos: pos.min(archive.len()), done: false }
}

impl<'a> Entries<'a> {
    /// Offset of the next header (after an error: of the header that failed).
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn step(&mut self) -> Result<Option<Entry<'a>>, TarError> {
        if self.pos == self.archive.len() {
            return Ok(None);
        }
        let header: &[u8; 512] =
            self.archive.get(self.pos..).and_then(|rest| rest.first_chunk::<512>()).ok_or(TarError::HeaderTruncated)?;
        if header.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        if !checksum_ok(header) {
            return Err(TarError::Checksum);
        }
        let size = octal(&header[124..136]).ok_or(TarError::Size)?;
        let data_start = self.pos + 512;
        let data_end = data_start
            .checked_add(size)
            .filter(|&e| e <= self.archive.len())
            .ok_or(TarError::DataTruncated { size })?;
        let is_file = match header[156] {
            b'0' | 0 => true,
            b'5' => false,
            t => return Err(TarError::EntryType(t)),
        };
        let name = member_name(header, !is_file)?;
        let at = self.pos;
        let padded = size.div_ceil(512).checked_mul(512).ok_or(TarError::DataTruncated { size })?;
        self.pos = data_start.checked_add(padded).ok_or(TarError::DataTruncated { size })?.min(self.archive.len());
        Ok(Some(Entry { at, name, data: &self.archive[data_start..data_end], is_file }))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, TarError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let before = self.pos;
        let step = self.step();
        if step.is_err() {
            self.pos = before;
        }
        self.done = !matches!(step, Ok(Some(_)));
        step.transpose()
    }
}

/// Finds the regular file `wanted` in `archive`: every entry is read (in linear time, without
/// allocating), so a damaged header anywhere or a second member of that name is an error.
pub fn find<'a>(archive: &'a [u8], wanted: &[u8]) -> Result<Entry<'a>, TarError> {
    let mut found = None;
    for entry in entries(archive) {
        let entry = entry?;
        // Directories are skipped: only files are members.
        if entry.is_file && entry.name.is(wanted) {
            if found.is_some() {
                return Err(TarError::Duplicate);
            }
            found = Some(entry);
        }
    }
    found.ok_or(TarError::NotFound)
}

/// Writes a plain ustar header for a regular file `name` of `size` bytes, mode 0644, owner 0,
/// time 0, into `out`: a name over 100 bytes is split at a `/` into the prefix (at most 155
/// bytes) and the name field. `false` when the name does not fit, is not plain, or the size does
/// not fit the field.
pub fn write_header(name: &[u8], size: usize, out: &mut [u8; 512]) -> bool {
    if name.is_empty() || !plain(name, false) || size as u64 >= 1 << 33 {
        return false;
    }
    let (prefix, name) = if name.len() <= 100 {
        (&b""[..], name)
    } else {
        // The last `/` that leaves at most 100 bytes for the name and 155 for the prefix.
        let split = (0..name.len()).rev().find(|&i| name[i] == b'/' && name.len() - i - 1 <= 100 && i <= 155);
        match split {
            Some(i) => (&name[..i], &name[i + 1..]),
            None => return false,
        }
    };
    *out = [0; 512];
    out[..name.len()].copy_from_slice(name);
    out[345..345 + prefix.len()].copy_from_slice(prefix);
    put_octal(&mut out[100..108], 0o644);
    put_octal(&mut out[108..116], 0);
    put_octal(&mut out[116..124], 0);
    put_octal(&mut out[124..136], size);
    put_octal(&mut out[136..148], 0);
    out[156] = b'0';
    out[257..263].copy_from_slice(b"ustar\0");
    out[263..265].copy_from_slice(b"00");
    out[148..156].copy_from_slice(b"        ");
    let sum: usize = out.iter().map(|&b| b as usize).sum();
    put_octal(&mut out[148..155], sum);
    out[155] = b' ';
    true
}

/// `n` in octal, zero-padded, NUL-terminated, filling `field`.
fn put_octal(field: &mut [u8], mut n: usize) {
    let digits = field.len() - 1;
    for i in (0..digits).rev() {
        field[i] = b'0' + (n % 8) as u8;
        n /= 8;
    }
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(prefix: &[u8], name: &[u8], kind: u8) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name);
        h[345..345 + prefix.len()].copy_from_slice(prefix);
        h[257..263].copy_from_slice(b"ustar\0");
        h[156] = kind;
        h
    }

    fn named(prefix: &[u8], name: &[u8]) -> Result<std::vec::Vec<u8>, TarError> {
        member_name(&header(prefix, name, b'0'), false).map(|n| n.bytes().collect())
    }

    extern crate std;

    #[test]
    fn leading_dot_components_go_wherever_they_are() {
        for (prefix, name) in [
            (&b""[..], &b"params/p1.bin"[..]),
            (b"", b"./params/p1.bin"),
            (b"", b"././params/p1.bin"),
            (b".", b"params/p1.bin"),
            (b"./", b"params/p1.bin"),
            (b"./.", b"params/p1.bin"),
            (b"params", b"p1.bin"),
            (b"./params", b"p1.bin"),
        ] {
            assert_eq!(named(prefix, name).as_deref(), Ok(&b"params/p1.bin"[..]), "{prefix:?} {name:?}");
            assert!(member_name(&header(prefix, name, b'0'), false).unwrap().is(b"params/p1.bin"));
        }
    }

    #[test]
    fn names_that_are_not_plain_are_invalid() {
        for (prefix, name) in [
            (&b""[..], &b"params//p1.bin"[..]),
            (b"", b"params/./p1.bin"),
            (b"", b"params/../p1.bin"),
            (b"", b"/params/p1.bin"),
            (b"", b"params\\p1.bin"),
            (b"", b"params/"),
            (b"", b"."),
            (b"", b""),
            (b"params", b"./p1.bin"),
            (b"params/", b"p1.bin"),
            (b"/params", b"p1.bin"),
            (b"..", b"p1.bin"),
            (b"params", b""),
        ] {
            assert_eq!(named(prefix, name), Err(TarError::Name), "{prefix:?} {name:?}");
        }
        // Directories may end with `/`, and `./` is the root.
        assert!(member_name(&header(b"", b"params/", b'5'), true).is_ok());
        assert!(member_name(&header(b"", b"./", b'5'), true).unwrap().is_empty());
    }

    #[test]
    fn written_headers_read_back() {
        let mut h = [0u8; 512];
        assert!(write_header(b"mlf-pack-header", 512, &mut h));
        assert!(checksum_ok(&h));
        assert_eq!(octal(&h[124..136]), Some(512));
        assert!(member_name(&h, false).unwrap().is(b"mlf-pack-header"));
        assert!(!write_header(b"a/../b", 1, &mut h));
        assert!(!write_header(&[b'a'; 101], 1, &mut h));
        let long = [&[b'd'; 120][..], b"/", &[b'f'; 90]].concat();
        assert!(write_header(&long, 1, &mut h));
        assert!(member_name(&h, false).unwrap().is(&long));
    }
}
