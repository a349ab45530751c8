//! Where blobs live: a symbol in an ELF (or other) shared or relocatable object, found with the
//! `object` crate (dynamic symbols too; `.rodata`, `.lrodata`, any alignment); an array literal
//! in C source (`devc.c`); a raw blob file; and `.tar` exports holding such files.

use std::collections::HashSet;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

use super::abi::{Abi, AbiScan};
use super::c_array::find_blob_arrays;
use super::layout::{Layout, blob_extent, sniff_layout};
use crate::error::{Context, Error, ErrorKind, Result};
use crate::read::archive::{Archive, read_limited};
use crate::read::detect::Detected;
use crate::read::detect::{MAX_GUNZIP_BYTES, gunzip};
use crate::read::sniff::{is_gzip, is_tar};
use crate::support::bytes::Bytes;

/// A blob found in a file.
#[derive(Clone, Debug)]
pub struct Found {
    /// The tar member it is in, for `.tar` exports.
    pub member: Option<String>,
    /// The symbol it is stored under (`None` for a raw blob file).
    pub symbol: Option<String>,
    /// The layout (from the symbol name, or sniffed for raw files).
    pub layout: Layout,
    /// The blob: exactly `8 + nbytes` bytes.
    pub bytes: Bytes,
    /// Where in the file (`section .rodata, file offset 0x8f06`, `line 10`, `whole file`).
    pub location: String,
}

impl Found {
    /// `member: symbol` / `symbol` / `blob` — for messages and error members.
    pub fn place(&self) -> String {
        let sym = self.symbol.clone().unwrap_or_else(|| "blob".to_string());
        match &self.member {
            Some(m) => format!("{m}: {sym}"),
            None => sym,
        }
    }
}

/// What a file holds.
#[derive(Clone, Debug)]
pub struct Scan {
    /// What the file is (`ELF shared object`, `C source`, `tar export`, `raw blob`).
    pub container: String,
    /// The blobs found, in file (member) order.
    pub found: Vec<Found>,
    /// Members of a tar export, with what each is.
    pub members: Vec<(String, String)>,
    /// The ABI generation the code was built for.
    pub abi: Abi,
}

/// A blob symbol in an object file.
#[derive(Clone, Debug)]
pub struct ObjectBlob {
    /// The symbol.
    pub symbol: String,
    /// The layout its name selects.
    pub layout: Layout,
    /// The section holding it.
    pub section: String,
    /// File offset of the blob's first byte.
    pub file_offset: u64,
    /// The blob (`8 + nbytes` bytes).
    pub bytes: Bytes,
}

/// What an object file holds.
#[derive(Clone, Debug)]
pub struct ObjectScan {
    /// Format and kind (`ELF shared object`, `ELF relocatable object`, …).
    pub kind: String,
    /// Blob symbols, deduplicated by name (a `.so` lists them in `.symtab` and `.dynsym`).
    pub blobs: Vec<ObjectBlob>,
    /// Every symbol name (defined or not), for ABI detection.
    pub symbol_names: Vec<String>,
}

/// Reads an object file's symbols (static and dynamic) and the bytes of every blob symbol.
/// Errors name the symbol as the member and `nbytes` as the field.
pub fn scan_object(data: &Bytes) -> Result<ObjectScan> {
    let file = object::File::parse(data.as_slice()).map_err(|e| {
        Error::new(ErrorKind::UnknownFormat(format!("not an object file the `object` crate can read: {e}")))
    })?;
    let format = match file.format() {
        object::BinaryFormat::Elf => "ELF",
        object::BinaryFormat::MachO => "Mach-O",
        object::BinaryFormat::Coff => "COFF",
        object::BinaryFormat::Pe => "PE",
        _ => "object",
    };
    let kind = match file.kind() {
        object::ObjectKind::Dynamic => "shared object",
        object::ObjectKind::Relocatable => "relocatable object",
        object::ObjectKind::Executable => "executable",
        _ => "file",
    };
    let mut scan = ObjectScan { kind: format!("{format} {kind}"), blobs: Vec::new(), symbol_names: Vec::new() };
    let mut names = HashSet::new();
    let mut done = HashSet::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        let Ok(name) = sym.name() else { continue };
        if names.insert(name.to_string()) {
            scan.symbol_names.push(name.to_string());
        }
        let Some(layout) = Layout::from_symbol(name) else { continue };
        if sym.is_undefined() || done.contains(name) {
            continue;
        }
        done.insert(name.to_string());
        let blob = symbol_bytes(&file, &sym, data).in_member(name)?;
        scan.blobs.push(ObjectBlob {
            symbol: name.to_string(),
            layout,
            section: blob.0,
            file_offset: blob.1,
            bytes: blob.2,
        });
    }
    Ok(scan)
}

fn symbol_bytes<'d>(
    file: &object::File<'d>,
    sym: &object::Symbol<'d, '_>,
    data: &Bytes,
) -> Result<(String, u64, Bytes)> {
    let idx = sym
        .section_index()
        .ok_or_else(|| Error::invalid("the symbol is not defined in a section (absolute or common symbol)"))?;
    let section = file.section_by_index(idx).map_err(|e| Error::invalid(format!("its section cannot be read: {e}")))?;
    let sname = section.name().unwrap_or("?").to_string();
    let (foff, fsize) = section
        .file_range()
        .ok_or_else(|| Error::invalid(format!("it is in section {sname}, which has no contents in the file (.bss)")))?;
    let off = sym.address().checked_sub(section.address()).filter(|o| *o <= fsize).ok_or_else(|| {
        Error::invalid(format!(
            "its address {:#x} is outside section {sname} ({:#x}, {fsize} bytes)",
            sym.address(),
            section.address()
        ))
    })?;
    let start = foff.checked_add(off).ok_or_else(|| Error::invalid("offset overflows"))?;
    let region = usize::try_from(start)
        .ok()
        .zip(usize::try_from(fsize - off).ok())
        .and_then(|(s, n)| data.slice(s..s.checked_add(n)?))
        .ok_or_else(|| Error::invalid(format!("section {sname} lies outside the file")))?;
    let blob = blob_extent(&region)?;
    if sym.size() != 0 && sym.size() != blob.len() as u64 {
        return Err(Error::mismatch(format!(
            "the symbol is {} bytes but the blob it holds is 8 + nbytes = {} bytes",
            sym.size(),
            blob.len()
        ))
        .at("nbytes"));
    }
    Ok((sname, start, blob))
}

/// Every blob array in C text, each checked to be exactly one blob (`8 + nbytes` bytes).
pub fn scan_c(text: &str) -> Result<Vec<Found>> {
    let mut out = Vec::new();
    for arr in find_blob_arrays(text)? {
        let bytes = Bytes::new(arr.bytes);
        let blob = blob_extent(&bytes).in_member(&arr.symbol)?;
        if blob.len() != bytes.len() {
            return Err(Error::mismatch(format!(
                "the array has {} elements but the blob it holds is 8 + nbytes = {} bytes",
                bytes.len(),
                blob.len()
            ))
            .at("nbytes")
            .in_member(&arr.symbol));
        }
        out.push(Found {
            member: None,
            symbol: Some(arr.symbol),
            layout: arr.layout,
            bytes: blob,
            location: format!("line {}", arr.line),
        });
    }
    Ok(out)
}

/// A raw blob file: exactly one blob, layout sniffed.
pub fn scan_raw(data: &Bytes) -> Result<Found> {
    let blob = blob_extent(data)?;
    if blob.len() != data.len() {
        return Err(Error::mismatch(format!(
            "the file is {} bytes but the blob's nbytes says {} (+ 8 for the header)",
            data.len(),
            blob.len() - 8
        ))
        .at("nbytes"));
    }
    Ok(Found { member: None, symbol: None, layout: sniff_layout(data), bytes: blob, location: "whole file".into() })
}

/// Extensions of C sources (tar members with these are scanned) and of C headers.
const C_SOURCES: [&str; 4] = ["c", "cc", "cpp", "cxx"];
const C_HEADERS: [&str; 2] = ["h", "hpp"];

fn is_c_ext(ext: &str) -> bool {
    C_SOURCES.contains(&ext) || C_HEADERS.contains(&ext)
}

fn is_object(data: &[u8], ext: &str) -> bool {
    let magic = data.get(..4).unwrap_or(&[]);
    magic == b"\x7fELF"
        || matches!(magic, [0xfe, 0xed, 0xfa, 0xce | 0xcf] | [0xce | 0xcf, 0xfa, 0xed, 0xfe] | [0xca, 0xfe, 0xba, 0xbe])
        || matches!(ext, "o" | "obj" | "so" | "dylib" | "dll")
}

fn is_c_text<'a>(data: &'a [u8], ext: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(data).ok()?;
    if text.contains('\0') {
        return None;
    }
    (is_c_ext(ext) || text.contains("__tvm_dev_mblob") || text.contains("library_bin") || text.contains("#include"))
        .then_some(text)
}

/// What one file or member is, with the blobs and ABI evidence it holds.
fn scan_one(
    place: &str,
    member: Option<&str>,
    data: &Bytes,
    ext: &str,
    abi: &mut AbiScan,
    found: &mut Vec<Found>,
) -> Result<String> {
    if is_object(data, ext) {
        let obj = scan_object(data)?;
        abi.symbols(place, obj.symbol_names.iter().map(String::as_str));
        for b in obj.blobs {
            abi.layout(place, b.layout);
            found.push(Found {
                member: member.map(str::to_string),
                symbol: Some(b.symbol),
                layout: b.layout,
                bytes: b.bytes,
                location: format!("section {}, file offset {:#x}", b.section, b.file_offset),
            });
        }
        return Ok(obj.kind);
    }
    if let Some(text) = is_c_text(data, ext) {
        abi.c_text(place, text);
        for mut f in scan_c(text)? {
            abi.layout(place, f.layout);
            f.member = member.map(str::to_string);
            found.push(f);
        }
        return Ok("C source".into());
    }
    if is_c_ext(ext) {
        return Err(Error::invalid("a C source that is not UTF-8 text (or holds NUL bytes)"));
    }
    let mut f = scan_raw(data)?;
    abi.layout(place, f.layout);
    f.member = member.map(str::to_string);
    found.push(f);
    Ok("raw blob".into())
}

/// Scans file contents: a `.tar` export (each `.o`/`.so`/`.c` member), an object file, C
/// source or a raw blob. `path` names the file in messages and evidence.
pub fn scan_bytes(path: &Path, data: Bytes) -> Result<Scan> {
    let gzipped = is_gzip(&data);
    let data = if gzipped { Bytes::new(gunzip(&data, MAX_GUNZIP_BYTES)?) } else { data };
    if is_tar(&data) {
        return scan_archive(&Archive::from_tar_bytes(path, data)?, gzipped);
    }
    if gzipped {
        return Err(Error::new(ErrorKind::UnknownFormat("a gzip file that does not hold a tar archive".into())));
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let fname =
        path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    let mut abi = AbiScan::default();
    let mut found = Vec::new();
    let container = scan_one(&fname, None, &data, &ext, &mut abi, &mut found)?;
    Ok(Scan { container, found, members: Vec::new(), abi: abi.finish() })
}

/// Scans a `.tar` export's `.o`/`.so`/`.c` members (`gzipped`: the tar was decompressed).
pub fn scan_archive(archive: &Archive, gzipped: bool) -> Result<Scan> {
    let mut abi = AbiScan::default();
    let mut found = Vec::new();
    let mut members = Vec::new();
    for (name, bytes) in archive.names().filter_map(|n| Some((n, archive.get(n)?))) {
        let mext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        let wanted = is_object(bytes, &mext) || C_SOURCES.contains(&mext.as_str());
        if !wanted {
            members.push((name.to_string(), "not read".to_string()));
            continue;
        }
        let kind = scan_one(name, Some(name), bytes, &mext, &mut abi, &mut found).in_member(name)?;
        members.push((name.to_string(), kind));
    }
    let container = match (gzipped, archive.kind()) {
        (true, _) => "gzip-compressed tar export",
        (false, crate::read::archive::ArchiveKind::Directory) => "export extracted to a folder",
        (false, crate::read::archive::ArchiveKind::Tar) => "tar export",
    }
    .to_string();
    Ok(Scan { container, found, members, abi: abi.finish() })
}

/// Reads and scans a file.
pub fn scan(path: &Path) -> Result<Scan> {
    scan_bytes(path, read_limited(path, "file")?).in_file(path)
}

/// Scans a file [`detect_loaded`](crate::read::detect::detect_loaded) classified, from the tar it
/// read when it read one.
pub fn scan_detected(path: &Path, detected: &Detected) -> Result<Scan> {
    match &detected.archive {
        Some(archive) => scan_archive(archive, detected.gzipped).in_file(path),
        None => scan(path),
    }
}
