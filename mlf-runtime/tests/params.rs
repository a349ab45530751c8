//! Damaged external parameters are specific errors naming the identifier and the path, from a
//! split folder, a packed archive on disk and a packed archive in memory; nothing panics.

#![cfg(feature = "std")]

use std::path::Path;

use mlf_runtime::params::{FlashArchive, Folder, PackedArchive, ParamErrorKind, ParamRef, ParamSource, xxh64};

const A: &[u8] = &[1, 2, 3, 4, 5, 6, 7, 8];
const B: &[u8] = &[9; 16];

/// The identifier of A or B (`ParamRef` holds `&'static str`, as generated code does).
fn id(data: &[u8]) -> &'static str {
    static IDS: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
    let ids = IDS.get_or_init(|| [A, B].map(|d| format!("p{:016x}", xxh64(d))));
    &ids[usize::from(data != A)]
}

fn pref(data: &[u8]) -> ParamRef {
    ParamRef { id: id(data), bytes: data.len(), xxh64: xxh64(data) }
}

/// A split folder holding A and B, as `cargo mlf split` writes it.
fn folder(dir: &Path) {
    std::fs::create_dir_all(dir.join("params")).unwrap();
    let mut entries = Vec::new();
    for d in [A, B] {
        let i = id(d);
        std::fs::write(dir.join(format!("params/{i}.bin")), d).unwrap();
        entries.push(format!("\"{i}\": {{\"file\": \"params/{i}.bin\", \"bytes\": {}, \"xxh64\": \"{:016x}\", \"dtype\": \"uint8\", \"shape\": [{}]}}", d.len(), xxh64(d), d.len()));
    }
    std::fs::write(
        dir.join("configure.json"),
        format!("{{\"format\": \"mlf-params\", \"version\": 1, \"params\": {{{}}}}}", entries.join(", ")),
    )
    .unwrap();
}

fn pack(dir: &Path) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for name in ["configure.json".to_string(), format!("params/{}.bin", id(A)), format!("params/{}.bin", id(B))] {
        let p = dir.join(&name);
        if p.exists() {
            b.append_path_with_name(&p, &name).unwrap();
        }
    }
    b.into_inner().unwrap()
}

fn kind(src: &mut dyn ParamSource, p: &ParamRef) -> ParamErrorKind {
    let mut buf = vec![0u8; p.bytes];
    src.load(p, &mut buf).unwrap_err().kind
}

#[test]
fn intact_sources_deliver_the_bytes() {
    let t = tempfile::tempdir().unwrap();
    folder(t.path());
    let mut buf = [0u8; 8];
    Folder::open(t.path()).unwrap().load(&pref(A), &mut buf).unwrap();
    assert_eq!(buf, A);
    let tar = t.path().join("p.tar");
    std::fs::write(&tar, pack(t.path())).unwrap();
    PackedArchive::open(&tar).unwrap().load(&pref(B), &mut [0u8; 16]).unwrap();
    let mem: &[u8] = &pack(t.path());
    let flash = FlashArchive::new(mem).unwrap();
    assert_eq!(flash.bytes(&pref(A)).unwrap(), A);
}

#[test]
fn folder_errors() {
    let t = tempfile::tempdir().unwrap();
    folder(t.path());
    let (a, b) = (pref(A), pref(B));
    // unknown identifier
    let unknown = ParamRef { id: "p0123456789abcdef", bytes: 8, xxh64: 0 };
    let e = Folder::open(t.path()).unwrap().load(&unknown, &mut [0; 8]).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::UnknownId);
    assert!(e.path.as_str().ends_with("configure.json") && e.id.as_str() == "p0123456789abcdef", "{e}");
    // resized file
    std::fs::write(t.path().join(format!("params/{}.bin", a.id)), &A[..7]).unwrap();
    let e = Folder::open(t.path()).unwrap().load(&a, &mut [0; 8]).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::SizeMismatch { expected: 8, found: 7 });
    assert!(e.path.as_str().ends_with(&format!("params/{}.bin", a.id)), "{e}");
    // corrupted file
    std::fs::write(t.path().join(format!("params/{}.bin", a.id)), [0u8; 8]).unwrap();
    assert_eq!(kind(&mut Folder::open(t.path()).unwrap(), &a), ParamErrorKind::HashMismatch);
    // deleted file
    std::fs::remove_file(t.path().join(format!("params/{}.bin", b.id))).unwrap();
    assert_eq!(kind(&mut Folder::open(t.path()).unwrap(), &b), ParamErrorKind::Missing);
    // malformed and missing configuration
    std::fs::write(t.path().join("configure.json"), "{\"params\": 3}").unwrap();
    assert_eq!(Folder::open(t.path()).unwrap_err().kind, ParamErrorKind::ConfigMalformed);
    std::fs::write(
        t.path().join("configure.json"),
        "{\"params\": {\"x\": {\"file\": \"../../etc/passwd\", \"bytes\": 1}}}",
    )
    .unwrap();
    assert_eq!(Folder::open(t.path()).unwrap_err().kind, ParamErrorKind::ConfigMalformed);
    std::fs::remove_file(t.path().join("configure.json")).unwrap();
    let e = Folder::open(t.path()).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::ConfigMissing);
    assert!(e.path.as_str().ends_with("configure.json"));
}

#[test]
fn archive_errors() {
    let t = tempfile::tempdir().unwrap();
    folder(t.path());
    let (a, b) = (pref(A), pref(B));
    let good = pack(t.path());
    let tar = t.path().join("p.tar");
    // truncated inside a member
    std::fs::write(&tar, &good[..good.len() - 1024 - 600]).unwrap();
    assert_eq!(PackedArchive::open(&tar).unwrap_err().kind, ParamErrorKind::ArchiveTruncated);
    let mem: &[u8] = &good[..good.len() - 1024 - 600];
    let e = FlashArchive::new(mem).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::ArchiveTruncated, "{e}");
    // missing member
    std::fs::remove_file(t.path().join(format!("params/{}.bin", b.id))).unwrap();
    let without_b = pack(t.path());
    std::fs::write(&tar, &without_b).unwrap();
    assert_eq!(kind(&mut PackedArchive::open(&tar).unwrap(), &b), ParamErrorKind::Missing);
    let mem: &[u8] = &without_b;
    let e = FlashArchive::new(mem).unwrap().bytes(&b).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::Missing);
    assert_eq!(e.path.as_str(), format!("params/{}.bin", b.id));
    // resized / corrupted member
    std::fs::write(t.path().join(format!("params/{}.bin", a.id)), [7u8; 9]).unwrap();
    let mem: &[u8] = &pack(t.path());
    assert_eq!(
        FlashArchive::new(mem).unwrap().bytes(&a).unwrap_err().kind,
        ParamErrorKind::SizeMismatch { expected: 8, found: 9 }
    );
    std::fs::write(t.path().join(format!("params/{}.bin", a.id)), [7u8; 8]).unwrap();
    std::fs::write(&tar, pack(t.path())).unwrap();
    assert_eq!(kind(&mut PackedArchive::open(&tar).unwrap(), &a), ParamErrorKind::HashMismatch);
    // no configuration
    std::fs::remove_file(t.path().join("configure.json")).unwrap();
    let mem: &[u8] = &pack(t.path());
    assert_eq!(FlashArchive::new(mem).unwrap_err().kind, ParamErrorKind::ConfigMissing);
    // garbage never panics
    for n in [0usize, 1, 511, 512, 513, 2000] {
        let junk: &[u8] = &vec![0x37u8; n];
        let _ = FlashArchive::new(junk);
    }
}

/// A ustar header block for `name` (type `kind`, `size` bytes of data), with its checksum.
fn header(name: &str, kind: u8, size: usize) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A tar of `(name, type, data)` entries, data padded to blocks, ended by two zero blocks.
fn tar_of(entries: &[(&str, u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, data) in entries {
        out.extend_from_slice(&header(name, *kind, data.len()));
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// The pack rule: every source refuses what another source would read differently — a member
/// twice (first copy or last copy?), a PAX header renaming a member, a GNU long name, a damaged
/// header checksum — and reads a plain pack.
#[test]
fn one_rule_for_every_source() {
    let t = tempfile::tempdir().unwrap();
    let a = pref(A);
    let member = format!("params/{}.bin", a.id);
    let cfg = format!(
        "{{\"format\": \"mlf-params\", \"params\": {{\"{}\": {{\"file\": \"{member}\", \"bytes\": 8}}}}}}",
        a.id
    );
    let pax = format!("{} path={member}\n", member.len() + 7);
    let pax = format!("{} path={member}\n", pax.len());
    let cases: Vec<(&str, Vec<u8>, ParamErrorKind)> = vec![
        (
            "duplicate member",
            tar_of(&[("configure.json", b'0', cfg.as_bytes()), (&member, b'0', A), (&member, b'0', &[0u8; 8])]),
            ParamErrorKind::Duplicate,
        ),
        (
            "duplicate configure.json",
            tar_of(&[("configure.json", b'0', cfg.as_bytes()), ("configure.json", b'0', b"{}"), (&member, b'0', A)]),
            ParamErrorKind::Duplicate,
        ),
        (
            "PAX rename",
            tar_of(&[
                ("configure.json", b'0', cfg.as_bytes()),
                ("pax", b'x', pax.as_bytes()),
                ("params/other.bin", b'0', A),
            ]),
            ParamErrorKind::ArchiveInvalid,
        ),
        (
            "GNU long name",
            tar_of(&[
                ("configure.json", b'0', cfg.as_bytes()),
                ("././@LongLink", b'L', member.as_bytes()),
                ("x", b'0', A),
            ]),
            ParamErrorKind::ArchiveInvalid,
        ),
        (
            "symbolic link",
            tar_of(&[("configure.json", b'0', cfg.as_bytes()), (&member, b'2', b"")]),
            ParamErrorKind::ArchiveInvalid,
        ),
    ];
    for (what, bytes, expected) in cases {
        let mem: &[u8] = &bytes;
        let flash = FlashArchive::new(mem).and_then(|f| f.bytes(&a).map(drop));
        assert_eq!(flash.map_err(|e| e.kind), Err(expected), "FlashArchive, {what}");
        let path = t.path().join("p.tar");
        std::fs::write(&path, &bytes).unwrap();
        let packed = PackedArchive::open(&path).and_then(|mut p| p.load(&a, &mut [0; 8]));
        assert_eq!(packed.map_err(|e| e.kind), Err(expected), "PackedArchive, {what}");
    }
    let mut damaged = tar_of(&[("configure.json", b'0', cfg.as_bytes()), (&member, b'0', A)]);
    damaged[512 * 2 + 100] ^= 1; // the second header's mode: its checksum no longer holds
    let mem: &[u8] = &damaged;
    assert_eq!(FlashArchive::new(mem).unwrap_err().kind, ParamErrorKind::ArchiveInvalid);
    assert_eq!(PackedArchive::from_bytes("p.tar", damaged.clone()).unwrap_err().kind, ParamErrorKind::ArchiveInvalid);
    let plain = tar_of(&[("configure.json", b'0', cfg.as_bytes()), ("params", b'5', b""), (&member, b'0', A)]);
    let mem: &[u8] = &plain;
    assert_eq!(FlashArchive::new(mem).unwrap().bytes(&a).unwrap(), A);
    let mut buf = [0u8; 8];
    PackedArchive::from_bytes("p.tar", plain).unwrap().load(&a, &mut buf).unwrap();
    assert_eq!(buf, A);
}

/// A configuration or archive that is not a regular file is refused, never read: a FIFO would
/// block forever, `/dev/zero` would never end.
#[cfg(unix)]
#[test]
#[cfg_attr(miri, ignore = "makes a FIFO with mkfifo, a process Miri cannot spawn")]
fn special_files_are_refused() {
    let t = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", t.path().join("configure.json")).unwrap();
    assert!(Folder::open(t.path()).is_err());
    assert!(std::process::Command::new("mkfifo").arg(t.path().join("fifo.tar")).status().unwrap().success());
    assert!(PackedArchive::open(t.path().join("fifo.tar")).is_err());
    assert!(PackedArchive::open("/dev/zero").is_err());
}

/// Issue 25, class 4: members named with leading `.` components — `./params/<id>.bin`, or the
/// ustar prefix `.` (or `./params`) before the name — are the same members for every reader of
/// packs: the build side's (`cargo mlf inspect`, `pack`), the host's (`PackedArchive`) and the
/// device's (`FlashArchive`).
#[cfg(not(miri))]
#[test]
fn leading_dot_names_are_one_member_for_every_reader() {
    let a = pref(A);
    let member = format!("params/{}.bin", a.id);
    let cfg = format!(
        "{{\"format\": \"mlf-params\", \"version\": 1, \"params\": {{\"{}\": {{\"file\": \"{member}\", \"bytes\": 8, \"xxh64\": \"{:016x}\", \"dtype\": \"uint8\", \"shape\": [8]}}}}}}",
        a.id, a.xxh64
    );
    let with_prefix = |prefix: &str, name: &str| {
        let mut h = header(name, b'0', A.len());
        h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    };
    for (prefix, name) in [
        ("", format!("./{member}")),
        (".", member.clone()),
        ("./", member.clone()),
        ("./params", format!("{}.bin", a.id)),
    ] {
        let mut bytes = tar_of(&[("./configure.json", b'0', cfg.as_bytes())]);
        bytes.truncate(bytes.len() - 1024);
        bytes.extend_from_slice(&with_prefix(prefix, &name));
        bytes.extend_from_slice(A);
        bytes.resize(bytes.len().div_ceil(512) * 512 + 1024, 0);
        let what = format!("prefix {prefix:?}, name {name:?}");
        let built = mlf_build::__private::read::param_pack::read_pack(
            Path::new("p.tar"),
            mlf_build::__private::bytes::Bytes::new(bytes.clone()),
        )
        .unwrap_or_else(|e| panic!("{what}: inspect: {e}"));
        let entries = mlf_build::__private::read::param_pack::check_folder(&built)
            .unwrap_or_else(|e| panic!("{what}: inspect: {e}"));
        assert_eq!(entries.len(), 1, "{what}");
        assert_eq!(built.get(&entries[0].file).map(|b| b.as_slice()), Some(A), "{what}: inspect");
        let mem: &[u8] = &bytes;
        let flash = FlashArchive::new(mem).unwrap_or_else(|e| panic!("{what}: FlashArchive: {e}"));
        assert_eq!(flash.bytes(&a).unwrap_or_else(|e| panic!("{what}: FlashArchive: {e}")), A, "{what}");
        let mut buf = [0u8; 8];
        PackedArchive::from_bytes("p.tar", bytes.clone())
            .and_then(|mut p| p.load(&a, &mut buf))
            .unwrap_or_else(|e| panic!("{what}: PackedArchive: {e}"));
        assert_eq!(buf, A, "{what}");
    }
}

/// Issue 25, class 6: an error of the whole pack or of `configure.json` names the path, not an
/// empty identifier.
#[test]
fn pack_level_errors_name_no_empty_identifier() {
    let no_config = tar_of(&[("params/x.bin", b'0', A)]);
    let mem: &[u8] = &no_config;
    let mut damaged = tar_of(&[("configure.json", b'0', b"{}"), ("params/x.bin", b'0', A)]);
    damaged[100] ^= 1;
    let mem2: &[u8] = &damaged;
    for e in [
        FlashArchive::new(mem).map(drop).unwrap_err(),
        PackedArchive::from_bytes("p.tar", no_config.clone()).map(drop).unwrap_err(),
        FlashArchive::new(mem2).map(drop).unwrap_err(),
        PackedArchive::from_bytes("p.tar", damaged.clone()).map(drop).unwrap_err(),
    ] {
        let s = e.to_string();
        assert!(!s.contains("identifier \"\"") && s.contains("path"), "{s}");
    }
}
