//! A minimal, bounds-checked reader of the parameter packs `cargo mlf pack` writes, for every
//! source (`no_std` and `std` alike, so the host reads exactly what the device reads).
//!
//! **The pack rule** (also applied by `cargo mlf pack` and `cargo mlf inspect`): a pack is a
//! sequence of plain ustar (or v7) headers, each with a valid checksum, ended by a zero block or
//! the end of the data. Members are regular files (type `0` or NUL) and directories (`5`, skipped);
//! any other entry — PAX extended headers (`x`, `g`), GNU long names (`L`, `K`), links, devices —
//! makes the pack invalid, because a reader that ignored it would read another member than one
//! that applied it. A name (after leading `./`) occurring twice makes the pack invalid for that
//! name: there is no "first copy" or "last copy".

/// A regular file inside a tar.
pub(crate) struct Member<'a> {
    pub data: &'a [u8],
}

/// Why a lookup failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TarError {
    /// The archive ends inside a header or a member.
    Truncated,
    /// A header is damaged (checksum, size field) or is an entry the pack rule refuses.
    Invalid,
    /// The member occurs more than once.
    Duplicate,
    /// The member is not in the archive.
    NotFound,
}

/// One entry: its name (prefix and name fields, leading `./` stripped) and its data.
pub(crate) struct Entry<'a> {
    prefix: &'a [u8],
    name: &'a [u8],
    /// The member's bytes.
    pub data: &'a [u8],
    /// Whether it is a regular file (else a directory).
    pub is_file: bool,
}

impl Entry<'_> {
    /// Whether the entry's full name is `wanted`.
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

    /// The full name (`prefix/name`).
    #[cfg(feature = "std")]
    pub fn full_name(&self) -> std::vec::Vec<u8> {
        let mut out = std::vec::Vec::with_capacity(self.prefix.len() + 1 + self.name.len());
        if !self.prefix.is_empty() {
            out.extend_from_slice(self.prefix);
            out.push(b'/');
        }
        out.extend_from_slice(self.name);
        out
    }
}

fn octal(field: &[u8]) -> Option<usize> {
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
fn checksum_ok(header: &[u8]) -> bool {
    let sum: usize =
        header.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { b as usize }).sum();
    octal(&header[148..156]) == Some(sum)
}

fn field(f: &[u8]) -> &[u8] {
    &f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]
}

fn strip_dot(mut n: &[u8]) -> &[u8] {
    while let Some(rest) = n.strip_prefix(b"./") {
        n = rest;
    }
    n
}

/// The entries of `archive` in order, each checked against the pack rule; iteration stops at
/// the first error.
pub(crate) struct Entries<'a> {
    archive: &'a [u8],
    pos: usize,
    done: bool,
}

/// The entries of `archive`.
pub(crate) fn entries(archive: &[u8]) -> Entries<'_> {
    Entries { archive, pos: 0, done: false }
}

impl<'a> Entries<'a> {
    fn step(&mut self) -> Result<Option<Entry<'a>>, TarError> {
        if self.pos == self.archive.len() {
            return Ok(None);
        }
        let header = self.archive.get(self.pos..self.pos + 512).ok_or(TarError::Truncated)?;
        if header.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        if !checksum_ok(header) {
            return Err(TarError::Invalid);
        }
        let size = octal(&header[124..136]).ok_or(TarError::Invalid)?;
        let data_start = self.pos + 512;
        let data_end = data_start.checked_add(size).filter(|&e| e <= self.archive.len()).ok_or(TarError::Truncated)?;
        let is_file = match header[156] {
            b'0' | 0 => true,
            b'5' => false,
            _ => return Err(TarError::Invalid),
        };
        // The prefix field exists in POSIX ustar headers only (GNU headers keep times there).
        let prefix = if &header[257..263] == b"ustar\0" { strip_dot(field(&header[345..500])) } else { &[] };
        let name = field(&header[..100]);
        let name = if prefix.is_empty() { strip_dot(name) } else { name };
        let padded = size.div_ceil(512).checked_mul(512).ok_or(TarError::Truncated)?;
        self.pos = data_start.checked_add(padded).ok_or(TarError::Truncated)?.min(self.archive.len());
        Ok(Some(Entry { prefix, name, data: &self.archive[data_start..data_end], is_file }))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, TarError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.step();
        self.done = !matches!(step, Ok(Some(_)));
        step.transpose()
    }
}

/// Finds the regular file `wanted` in `archive`: every entry is read (in linear time, without
/// allocating), so a damaged header anywhere or a second member of that name is an error.
pub(crate) fn find<'a>(archive: &'a [u8], wanted: &[u8]) -> Result<Member<'a>, TarError> {
    let mut found = None;
    for entry in entries(archive) {
        let entry = entry?;
        // Directories are skipped: only files are members.
        if entry.is_file && entry.is(wanted) {
            if found.is_some() {
                return Err(TarError::Duplicate);
            }
            found = Some(Member { data: entry.data });
        }
    }
    found.ok_or(TarError::NotFound)
}
