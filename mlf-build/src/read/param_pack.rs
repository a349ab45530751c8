//! The configuration of a split folder or packed parameter archive (`configure.json`, as
//! `cargo mlf split` writes it), checked against its files.

use std::collections::BTreeMap;
use std::path::Path;

use super::archive::{Archive, ArchiveKind};
use super::json::{self, J};
use crate::error::{Error, ErrorKind, Result};
use crate::support::bytes::Bytes;
use crate::support::hash::{id_for, xxh64};

/// One entry of a split folder's `configure.json`, as checked by [`check_folder`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigEntry {
    /// Identifier.
    pub id: String,
    /// File path relative to the folder.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// xxh64 as recorded.
    pub xxh64: String,
    /// dtype as recorded.
    pub dtype: String,
    /// Shape as recorded.
    pub shape: Vec<u64>,
    /// Tensor names.
    pub names: Vec<String>,
}

/// Reads `configure.json` of a split folder (or the same member of a packed archive) and checks
/// every entry against its file: present, the recorded size, the recorded hash, and named
/// `params/<id>.bin` (how `no_std` sources resolve identifiers). Errors name the identifier and
/// the path.
pub fn check_folder(archive: &Archive) -> Result<Vec<ConfigEntry>> {
    let cfg = archive.get("configure.json").ok_or_else(|| Error::missing("configure.json").in_file(archive.path()))?;
    let value = json::parse(cfg).map_err(|e| e.in_member("configure.json").in_file(archive.path()))?;
    let root = J::root(&value);
    let located = |e: Error| e.in_member("configure.json").in_file(archive.path());
    let format = root.get("format").and_then(|f| f.str().map(str::to_string)).map_err(located)?;
    if format != "mlf-params" {
        return Err(located(
            root.get("format").expect("present").err(format!("expected \"mlf-params\", found {format:?}")),
        ));
    }
    let mut out = Vec::new();
    for (id, e) in root.get("params").and_then(|p| p.entries()).map_err(located)? {
        let entry = ConfigEntry {
            id: id.to_string(),
            file: e.get("file").and_then(|f| f.str().map(str::to_string)).map_err(located)?,
            bytes: e.get("bytes").and_then(|b| b.u64()).map_err(located)?,
            xxh64: e.get("xxh64").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            dtype: e.get("dtype").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            shape: e.get("shape").and_then(|s| s.array()?.iter().map(|d| d.u64()).collect()).map_err(located)?,
            names: e
                .opt("names")
                .map_err(located)?
                .map(|n| n.array()?.iter().map(|s| s.str().map(str::to_string)).collect())
                .transpose()
                .map_err(located)?
                .unwrap_or_default(),
        };
        let expected = format!("params/{id}.bin");
        if entry.file != expected {
            return Err(located(
                Error::invalid(format!(
                    "identifier {id} maps to {:?}; parameters must be stored as {expected:?}",
                    entry.file
                ))
                .at(format!("params.{id}.file")),
            ));
        }
        let data = archive.get(&entry.file).ok_or_else(|| {
            Error::missing(format!("the file of identifier {id}")).in_member(entry.file.clone()).in_file(archive.path())
        })?;
        if data.len() as u64 != entry.bytes {
            return Err(Error::mismatch(format!(
                "identifier {id}: {} bytes, configure.json says {}",
                data.len(),
                entry.bytes
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        if format!("{:016x}", xxh64(data)) != entry.xxh64 || id_for(data) != id {
            return Err(Error::mismatch(format!(
                "identifier {id}: the file's hash does not match (changed or damaged)"
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        out.push(entry);
    }
    Ok(out)
}

/// Reads a packed parameter archive by **the pack rule**, the rule every reader of packs applies
/// with the same code (`mlf_pack::tar`: `mlf_runtime::params::FlashArchive` on a device,
/// `PackedArchive` on a host, `cargo mlf inspect`, and `cargo mlf pack`, which writes nothing
/// else): plain ustar (or v7) headers with valid checksums, ended by a zero block or the end of
/// the data; regular files and directories only — PAX extended headers, GNU long names, links
/// and devices are refused, since a reader that ignored them would read another member than one
/// that applied them; one name rule (`mlf_pack::tar::member_name`: leading `.` components
/// dropped, any other name that is not plain refused); no name twice. A pack with a header
/// (`mlf-pack-header`) is checked against it: the bytes it covers, their hash, nothing but the
/// signature after them. Errors name the member.
pub fn read_pack(path: &Path, data: Bytes) -> Result<Archive> {
    let bytes = data.as_slice();
    let mut members = BTreeMap::new();
    let mut entries = mlf_pack::tar::entries(bytes);
    loop {
        let pos = entries.offset();
        let entry = match entries.next() {
            None => break,
            Some(Ok(e)) => e,
            Some(Err(e)) => return Err(pack_error(path, bytes, pos, e)),
        };
        if !entry.is_file {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.name.bytes().collect::<Vec<u8>>()).into_owned();
        let start = entry.data_at();
        let slice = data.slice(start..start + entry.data.len()).expect("a member's range is inside the pack");
        if members.insert(name.clone(), slice).is_some() {
            return Err(Error::invalid(
                "occurs more than once; a parameter pack names every member once (no first or last copy)",
            )
            .in_member(name)
            .in_file(path));
        }
    }
    if mlf_pack::PackHeader::of(bytes).ok().flatten().is_some() || members.contains_key(HEADER_MEMBER) {
        mlf_pack::check(bytes, None, None).map_err(|e| {
            Error::invalid(format!("{} ({})", e.what(), "the pack header, or what it covers"))
                .in_member(HEADER_MEMBER)
                .in_file(path)
        })?;
    }
    Ok(Archive::from_members(path, ArchiveKind::Tar, members))
}

/// The name of the pack's header member.
pub const HEADER_MEMBER: &str = mlf_pack::header::HEADER_MEMBER;

/// The error of the header at `pos`, naming the member as its header spells it.
fn pack_error(path: &Path, bytes: &[u8], pos: usize, e: mlf_pack::TarError) -> Error {
    use mlf_pack::TarError as T;
    let at = format!("header at offset {pos}");
    let raw = bytes.get(pos..).and_then(|r| r.first_chunk::<512>()).map(raw_member_name).unwrap_or_default();
    let member = |e: Error| if raw.is_empty() { e.in_file(path) } else { e.in_member(raw.clone()).in_file(path) };
    match e {
        T::HeaderTruncated => Error::new(ErrorKind::CorruptTar(format!("the pack ends inside the {at}"))).in_file(path),
        T::Checksum => member(Error::new(ErrorKind::CorruptTar(format!("the {at} has a wrong checksum")))),
        T::Size => member(Error::new(ErrorKind::CorruptTar(format!("the {at} has no valid size")))),
        T::DataTruncated { size } => member(Error::new(ErrorKind::CorruptTar(format!(
            "the member claims {size} bytes at offset {}, past the end of the pack ({} bytes)",
            pos + 512,
            bytes.len()
        )))),
        T::EntryType(t) => member(Error::invalid(format!(
            "is a tar entry of type {:?} ({}); a parameter pack holds plain ustar files only, so every \
             reader (the device's too) reads the same members",
            t as char,
            e.what()
        ))),
        T::Name => member(Error::invalid(
            "is not a plain member name (leading `./` only: no empty, `.` or `..` component, no `\\`)",
        )),
        T::Duplicate | T::NotFound => member(Error::invalid(e.what())),
    }
}

/// The member name of a pack header as written (the POSIX ustar prefix and name fields; GNU
/// headers have no prefix field), for messages.
fn raw_member_name(header: &[u8; 512]) -> String {
    let field = |f: &[u8]| String::from_utf8_lossy(mlf_pack::tar::field(f)).into_owned();
    let name = field(&header[..100]);
    if &header[257..263] == b"ustar\0" {
        let prefix = field(&header[345..500]);
        if !prefix.is_empty() {
            return format!("{prefix}/{name}");
        }
    }
    name
}
