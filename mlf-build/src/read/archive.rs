//! Reads a tar archive or an extracted directory into a map of normalised member names to bytes.
//!
//! The tar file is read into memory once; members are zero-copy [`Bytes`] slices of it. Names are
//! normalised (leading `./` stripped); absolute paths, `..`, NUL bytes and links are refused with
//! an error naming the member. Nothing is ever written to disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::sniff::is_gzip;
use crate::error::{Context, Error, ErrorKind, Result};
use crate::support::bytes::Bytes;

/// Largest archive, directory or model file the readers accept, in bytes (1 GiB).
pub const MAX_ARCHIVE_BYTES: u64 = 1 << 30;
/// Most members an archive or directory may have.
pub const MAX_MEMBERS: usize = 100_000;

/// Where an archive came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// A tar file.
    Tar,
    /// An extracted directory.
    Directory,
}

/// A read archive: member names (normalised, `/`-separated) to their bytes.
#[derive(Clone, Debug)]
pub struct Archive {
    path: PathBuf,
    kind: ArchiveKind,
    members: BTreeMap<String, Bytes>,
    warnings: Vec<String>,
}

impl Archive {
    /// Opens a tar file or a directory.
    pub fn open(path: impl AsRef<Path>) -> Result<Archive> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(Error::from).in_file(path)?;
        if meta.is_dir() {
            Archive::read_dir(path)
        } else {
            Archive::from_tar_bytes(path, read_limited(path, "archive")?)
        }
    }

    /// Reads a tar archive already in memory. `path` is only used in messages.
    pub fn from_tar_bytes(path: impl AsRef<Path>, data: Bytes) -> Result<Archive> {
        let path = path.as_ref();
        read_tar(path, data).in_file(path)
    }

    fn read_dir(root: &Path) -> Result<Archive> {
        let mut members = BTreeMap::new();
        let mut total = 0u64;
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let dir = root.join(&rel);
            let mut entries: Vec<_> = std::fs::read_dir(&dir)
                .map_err(Error::from)
                .in_file(&dir)?
                .collect::<std::io::Result<_>>()
                .map_err(Error::from)
                .in_file(&dir)?;
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let name = entry.file_name();
                let name = name
                    .to_str()
                    .ok_or_else(|| Error::invalid(format!("file name {name:?} is not UTF-8")).in_file(&dir))?;
                let rel_child = rel.join(name);
                let member =
                    rel_child.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                let ft = entry.file_type().map_err(Error::from).in_file(entry.path())?;
                if ft.is_dir() {
                    stack.push(rel_child);
                } else if ft.is_file() {
                    let len = entry.metadata().map_err(Error::from).in_file(entry.path())?.len();
                    total = total.saturating_add(len);
                    if total > MAX_ARCHIVE_BYTES {
                        return Err(Error::new(ErrorKind::TooLarge {
                            what: "directory contents".into(),
                            size: total,
                            limit: MAX_ARCHIVE_BYTES,
                        })
                        .in_file(root));
                    }
                    let data = crate::support::files::read_regular(&entry.path(), len, "file")?;
                    members.insert(member, Bytes::new(data));
                    if members.len() > MAX_MEMBERS {
                        return Err(Error::invalid(format!("more than {MAX_MEMBERS} files")).in_file(root));
                    }
                } else {
                    return Err(Error::new(ErrorKind::NotARegularFile {
                        name: member,
                        what: if ft.is_symlink() { "symbolic link" } else { "special file" },
                    })
                    .in_file(root));
                }
            }
        }
        Ok(Archive { path: root.to_path_buf(), kind: ArchiveKind::Directory, members, warnings: Vec::new() })
    }

    /// An archive of members already read (`path` names it in messages).
    pub fn from_members(path: &Path, kind: ArchiveKind, members: BTreeMap<String, Bytes>) -> Archive {
        Archive { path: path.to_path_buf(), kind, members, warnings: Vec::new() }
    }

    /// The file or directory this archive was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tar or directory.
    pub fn kind(&self) -> ArchiveKind {
        self.kind
    }

    /// A member by normalised name.
    pub fn get(&self, name: &str) -> Option<&Bytes> {
        self.members.get(name)
    }

    /// A member by name, or an error naming it as missing.
    pub fn require(&self, name: &str) -> Result<&Bytes> {
        self.get(name).ok_or_else(|| Error::missing(format!("member {name}")).in_file(&self.path))
    }

    /// The first of several candidate names that exists, with its name.
    pub fn first_of<'a>(&self, names: &[&'a str]) -> Option<(&'a str, &Bytes)> {
        names.iter().find_map(|n| self.get(n).map(|b| (*n, b)))
    }

    /// All member names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    /// Members directly inside `dir` (not in subfolders) whose names end with one of `exts`.
    pub fn files_in(&self, dir: &str, exts: &[&str]) -> Vec<(&str, &Bytes)> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.members
            .iter()
            .filter(|(name, _)| {
                name.strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/') && exts.iter().any(|e| rest.ends_with(e)))
            })
            .map(|(n, b)| (n.as_str(), b))
            .collect()
    }

    /// Non-fatal findings (duplicate members and the like).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// Reads a whole regular file of at most [`MAX_ARCHIVE_BYTES`]; `what` names it in the error for
/// a larger one (`archive`, `file`). FIFOs, devices and the like are refused before they are
/// opened.
pub fn read_limited(path: &Path, what: &str) -> Result<Bytes> {
    crate::support::files::read_regular(path, MAX_ARCHIVE_BYTES, what).map(Bytes::new)
}

/// Normalises a member name: strips leading `./` (any number), joins with `/`, and refuses
/// absolute paths, `..` and NUL bytes. Returns `None` for the archive root itself.
pub fn normalise_member_name(raw: &str) -> Result<Option<String>> {
    if raw.contains('\0') || raw.starts_with('/') || raw.starts_with('\\') || raw.contains(":\\") {
        return Err(Error::new(ErrorKind::UnsafePath(raw.to_string())));
    }
    let mut parts = Vec::new();
    for part in raw.split(['/', '\\']) {
        match part {
            "" | "." => continue,
            ".." => return Err(Error::new(ErrorKind::UnsafePath(raw.to_string()))),
            p => parts.push(p),
        }
    }
    if parts.is_empty() { Ok(None) } else { Ok(Some(parts.join("/"))) }
}

fn read_tar(path: &Path, data: Bytes) -> Result<Archive> {
    let bytes = data.as_slice();
    if is_gzip(bytes) {
        return Err(Error::new(ErrorKind::UnknownFormat(
            "gzip-compressed file; decompress it first (gunzip) and pass the .tar".into(),
        )));
    }
    if bytes.len() < 512 || !header_checksum_ok(&bytes[..512]) {
        return Err(Error::new(ErrorKind::UnknownFormat("not a tar archive (no valid tar header at offset 0)".into())));
    }
    let mut archive = tar::Archive::new(bytes);
    let mut members = BTreeMap::new();
    let warnings = Vec::new();
    let entries = archive.entries().map_err(|e| Error::new(ErrorKind::CorruptTar(e.to_string())))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::new(ErrorKind::CorruptTar(e.to_string())))?;
        let raw_name = entry
            .path()
            .map_err(|e| Error::new(ErrorKind::CorruptTar(format!("member name: {e}"))))?
            .to_string_lossy()
            .into_owned();
        let et = entry.header().entry_type();
        use tar::EntryType as T;
        let what = match et {
            T::Regular | T::Continuous => None,
            T::Directory => {
                normalise_member_name(&raw_name)?;
                continue;
            }
            T::Symlink => Some("symbolic link"),
            T::Link => Some("hard link"),
            T::Char => Some("character device"),
            T::Block => Some("block device"),
            T::Fifo => Some("FIFO"),
            T::GNUSparse => Some("sparse file"),
            T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink => continue,
            _ => Some("non-regular entry"),
        };
        if let Some(what) = what {
            return Err(Error::new(ErrorKind::NotARegularFile { name: raw_name, what }));
        }
        let Some(name) = normalise_member_name(&raw_name)? else { continue };
        let size = entry.size();
        let start = entry.raw_file_position();
        let end = start.checked_add(size).filter(|&e| e <= bytes.len() as u64).ok_or_else(|| {
            Error::new(ErrorKind::CorruptTar(format!(
                "member {name:?} claims {size} bytes at offset {start}, past the end of the file ({} bytes)",
                bytes.len()
            )))
        })?;
        let slice = data.slice(start as usize..end as usize).expect("range checked above");
        if members.insert(name.clone(), slice).is_some() {
            // One rule for every reader: which copy would a reader take? None: refused.
            return Err(
                Error::invalid("occurs more than once in the archive; refusing to choose a copy").in_member(name)
            );
        }
        if members.len() > MAX_MEMBERS {
            return Err(Error::invalid(format!("more than {MAX_MEMBERS} members")));
        }
    }
    // A tar whose data stops mid-way ends without the two zero blocks; the tar crate accepts
    // some such files, so check that the last member's data is complete (done above) and that
    // the archive is not cut inside a header.
    let _ = path;
    Ok(Archive { path: path.to_path_buf(), kind: ArchiveKind::Tar, members, warnings })
}

/// Checks the tar header checksum of a 512-byte block.
fn header_checksum_ok(block: &[u8]) -> bool {
    let field = &block[148..156];
    let text: String = field.iter().take_while(|&&b| b != 0).map(|&b| b as char).collect();
    let Ok(stored) = u32::from_str_radix(text.trim(), 8) else { return false };
    let sum: u32 =
        block.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { b' ' as u32 } else { b as u32 }).sum();
    sum == stored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_names() {
        assert_eq!(normalise_member_name("./a/b.c").unwrap().as_deref(), Some("a/b.c"));
        assert_eq!(normalise_member_name("././a//b").unwrap().as_deref(), Some("a/b"));
        assert_eq!(normalise_member_name("./").unwrap(), None);
        assert!(matches!(normalise_member_name("../x").unwrap_err().kind, ErrorKind::UnsafePath(_)));
        assert!(matches!(normalise_member_name("a/../../x").unwrap_err().kind, ErrorKind::UnsafePath(_)));
        assert!(matches!(normalise_member_name("/etc/passwd").unwrap_err().kind, ErrorKind::UnsafePath(_)));
    }
}
