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
    let flash = FlashArchive::new(mem).unwrap();
    let e = flash.bytes(&b).unwrap_err();
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
