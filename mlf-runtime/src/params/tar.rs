//! A minimal, bounds-checked reader of ustar archives (the format `cargo mlf pack` writes), for
//! `no_std` sources: it finds a member by name without allocating.

/// A regular file inside a tar.
pub(crate) struct Member<'a> {
    pub data: &'a [u8],
}

/// Why a lookup failed.
pub(crate) enum TarError {
    /// The archive ends inside a header or a member.
    Truncated,
    /// The member is not in the archive.
    NotFound,
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
    Some(n)
}

fn name_of(header: &[u8]) -> &[u8] {
    let end = |f: &'_ [u8]| f.iter().position(|&b| b == 0).unwrap_or(f.len());
    let name = &header[..100];
    &name[..end(name)]
}

fn prefix_of(header: &[u8]) -> &[u8] {
    if &header[257..262] != b"ustar" {
        return &[];
    }
    let p = &header[345..500];
    &p[..p.iter().position(|&b| b == 0).unwrap_or(p.len())]
}

/// Finds `wanted` (compared after stripping leading `./`) in `archive`.
pub(crate) fn find<'a>(archive: &'a [u8], wanted: &[u8]) -> Result<Member<'a>, TarError> {
    let mut pos = 0usize;
    loop {
        let Some(header) = archive.get(pos..pos + 512) else { return Err(TarError::Truncated) };
        if header.iter().all(|&b| b == 0) {
            return Err(TarError::NotFound);
        }
        let size = octal(&header[124..136]).ok_or(TarError::Truncated)?;
        let data_start = pos + 512;
        let data_end = data_start.checked_add(size).ok_or(TarError::Truncated)?;
        if data_end > archive.len() {
            return Err(TarError::Truncated);
        }
        let kind = header[156];
        if kind == b'0' || kind == 0 {
            let prefix = prefix_of(header);
            let name = name_of(header);
            let matches = if prefix.is_empty() {
                strip_dot(name) == wanted
            } else {
                let p = strip_dot(prefix);
                wanted.len() == p.len() + 1 + name.len()
                    && wanted.starts_with(p)
                    && wanted[p.len()] == b'/'
                    && &wanted[p.len() + 1..] == name
            };
            if matches {
                return Ok(Member { data: &archive[data_start..data_end] });
            }
        }
        pos = data_start + size.div_ceil(512) * 512;
    }
}

fn strip_dot(mut n: &[u8]) -> &[u8] {
    while let Some(rest) = n.strip_prefix(b"./") {
        n = rest;
    }
    n
}
