//! The configuration of a split folder or packed parameter archive (`configure.json`, as
//! `cargo mlf split` writes it), checked against its files.

use std::collections::BTreeMap;
use std::path::Path;

use super::archive::{Archive, ArchiveKind, normalise_member_name};
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
/// (`mlf_runtime::params::FlashArchive` on a device, `PackedArchive` on a host, `cargo mlf
/// inspect`, and `cargo mlf pack`, which writes nothing else): plain ustar (or v7) headers with
/// valid checksums, ended by a zero block or the end of the data; regular files and
/// directories only — PAX extended headers, GNU long names, links and devices are refused, since
/// a reader that ignored them would read another member than one that applied them; no name
/// twice. Errors name the member.
pub fn read_pack(path: &Path, data: Bytes) -> Result<Archive> {
    let bytes = data.as_slice();
    let mut members = BTreeMap::new();
    let mut pos = 0usize;
    let at = |pos: usize| format!("header at offset {pos}");
    while pos < bytes.len() {
        let header = bytes.get(pos..pos + 512).ok_or_else(|| {
            Error::new(ErrorKind::CorruptTar(format!("the pack ends inside the {}", at(pos)))).in_file(path)
        })?;
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let name = pack_member_name(header);
        let member = |e: Error| e.in_member(name.clone()).in_file(path);
        if !pack_checksum_ok(header) {
            return Err(member(Error::new(ErrorKind::CorruptTar(format!("the {} has a wrong checksum", at(pos))))));
        }
        let size = pack_octal(&header[124..136])
            .ok_or_else(|| member(Error::new(ErrorKind::CorruptTar(format!("the {} has no valid size", at(pos))))))?;
        let start = pos + 512;
        let end = start.checked_add(size).filter(|&e| e <= bytes.len()).ok_or_else(|| {
            member(Error::new(ErrorKind::CorruptTar(format!(
                "the member claims {size} bytes at offset {start}, past the end of the pack ({} bytes)",
                bytes.len()
            ))))
        })?;
        pos = start.saturating_add(size.div_ceil(512).saturating_mul(512)).min(bytes.len());
        match header[156] {
            b'0' | 0 => {}
            b'5' => continue,
            t => {
                return Err(member(Error::invalid(format!(
                    "is a tar entry of type {:?} ({}); a parameter pack holds plain ustar files only, so every \
                     reader (the device's too) reads the same members",
                    t as char,
                    match t {
                        b'x' | b'g' => "a PAX extended header",
                        b'L' | b'K' => "a GNU long name",
                        b'1' | b'2' => "a link",
                        _ => "not a regular file",
                    }
                ))));
            }
        }
        let Some(normal) = normalise_member_name(&name).map_err(member)? else { continue };
        if normal != name.trim_start_matches("./") {
            return Err(member(Error::invalid("is not a plain member name (no `//`, `\\` or `./` inside)")));
        }
        let slice = data.slice(start..end).expect("range checked above");
        if members.insert(normal, slice).is_some() {
            return Err(member(Error::invalid(
                "occurs more than once; a parameter pack names every member once (no first or last copy)",
            )));
        }
    }
    Ok(Archive::from_members(path, ArchiveKind::Tar, members))
}

/// The member name of a pack header: the POSIX ustar prefix and name fields (GNU headers have no
/// prefix field), leading `./` kept.
fn pack_member_name(header: &[u8]) -> String {
    let field =
        |f: &[u8]| String::from_utf8_lossy(&f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]).into_owned();
    let name = field(&header[..100]);
    if &header[257..263] == b"ustar\0" {
        let prefix = field(&header[345..500]);
        let prefix = prefix.trim_start_matches("./");
        if !prefix.is_empty() {
            return format!("{prefix}/{name}");
        }
    }
    name
}

fn pack_octal(field: &[u8]) -> Option<usize> {
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

fn pack_checksum_ok(header: &[u8]) -> bool {
    let sum: usize =
        header.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { b as usize }).sum();
    pack_octal(&header[148..156]) == Some(sum)
}
