//! Packs checked once when they are opened (`FlashArchive::open`, `Slots::open`): bound to the
//! code by the model digest, signed when the code carries a public key, every file indexed; and
//! one name rule for every reader of packs, the build side's included.

#![cfg(feature = "std")]

use mlf_pack::sign::SigningKey;
use mlf_pack::write::{PackOptions, write_pack};
use mlf_runtime::params::{
    FlashArchive, Pack, PackedArchive, ParamErrorKind, ParamRef, ParamSource, Slot, Slots, xxh64,
};

const A: &[u8] = &[1, 2, 3, 4, 5, 6, 7, 8];
const B: &[u8] = &[9; 1000];
const C: &[u8] = &[7; 1000];

/// Values kept for the rest of the test program (`ParamRef` holds `&'static str` and a `Pack`
/// `&'static` parameters, as generated code's statics do), reachable, so not leaks.
static KEPT: std::sync::Mutex<Vec<&'static (dyn std::any::Any + Send + Sync)>> = std::sync::Mutex::new(Vec::new());

fn keep<T: Send + Sync + 'static>(x: T) -> &'static T {
    let r: &'static T = Box::leak(Box::new(x));
    KEPT.lock().unwrap().push(r);
    r
}

/// The identifier of `d`.
fn id(d: &[u8]) -> &'static str {
    keep(format!("p{:016x}", xxh64(d))).as_str()
}

fn pref(d: &[u8]) -> ParamRef {
    ParamRef { id: id(d), bytes: d.len(), xxh64: xxh64(d) }
}

/// The model's files, as a generated module's `PARAMS`.
fn params(files: &[&[u8]; 2]) -> &'static [ParamRef; 2] {
    keep(files.map(pref))
}

fn pack_of(files: &[&[u8]], digest: [u8; 32], sequence: u64, key: Option<&SigningKey>) -> Vec<u8> {
    let names: Vec<String> = files.iter().map(|d| format!("params/{}.bin", id(d))).collect();
    let mut members: Vec<(&str, &[u8])> = vec![("configure.json", b"{}")];
    members.extend(names.iter().map(String::as_str).zip(files.iter().copied()));
    write_pack(&members, &PackOptions { sequence, digest, key }).unwrap()
}

fn load(src: &mut dyn ParamSource, p: &ParamRef) -> Result<Vec<u8>, ParamErrorKind> {
    let mut buf = vec![0u8; p.bytes];
    src.load(p, &mut buf).map(|()| buf).map_err(|e| e.kind)
}

#[test]
fn an_opened_pack_reads_every_file_by_index_and_by_identifier() {
    let files = params(&[A, B]);
    let pack: &'static Pack<2> = keep(Pack::new(files, [1; 32], None));
    let bytes = pack_of(&[B, A], [1; 32], 0, None);
    let mut src = FlashArchive::open(&bytes, pack).unwrap();
    assert_eq!(load(&mut src, &files[0]).unwrap(), A);
    assert_eq!(load(&mut src, &files[1]).unwrap(), B);
    // A copy of an entry (not a reference into `PARAMS`) is found by its identifier.
    let copy = files[1];
    assert_eq!(src.bytes(&copy).unwrap(), B);
    assert_eq!(load(&mut src, &pref(C)), Err(ParamErrorKind::UnknownId));
    assert_eq!(src.header().map(|h| h.sequence), Some(0));
}

#[test]
fn a_pack_for_another_model_is_refused_when_opened_naming_both_digests() {
    let files = params(&[A, B]);
    let pack: &'static Pack<2> = keep(Pack::new(files, [1; 32], None));
    // Same shape, other weights, another digest.
    let other = pack_of(&[A, C], [2; 32], 0, None);
    let e = FlashArchive::open(&other, pack).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::ModelMismatch { pack: 0x0202_0202, code: 0x0101_0101 });
    let text = e.to_string();
    assert!(text.contains("02020202") && text.contains("01010101"), "{text}");
    // The right digest and a missing file, a file of another size, a file twice.
    let missing = pack_of(&[A], [1; 32], 0, None);
    assert_eq!(FlashArchive::open(&missing, pack).unwrap_err().kind, ParamErrorKind::Missing);
    let twice = pack_of(&[A, B, B], [1; 32], 0, None);
    assert_eq!(FlashArchive::open(&twice, pack).unwrap_err().kind, ParamErrorKind::Duplicate);
    let resized: &'static [ParamRef; 2] = keep([pref(A), ParamRef { bytes: 999, ..pref(B) }]);
    let pack2: &'static Pack<2> = keep(Pack::new(resized, [1; 32], None));
    let e = FlashArchive::open(&pack_of(&[A, B], [1; 32], 0, None), pack2).unwrap_err();
    assert_eq!(e.kind, ParamErrorKind::SizeMismatch { expected: 999, found: 1000 });
    // A pack made before packs had headers.
    let mut old = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_size(8);
    h.set_cksum();
    old.append_data(&mut h, format!("params/{}.bin", id(A)), A).unwrap();
    let old = old.into_inner().unwrap();
    assert_eq!(FlashArchive::open(&old, pack).unwrap_err().kind, ParamErrorKind::PackHeader);
}

#[test]
#[cfg_attr(miri, ignore = "Ed25519 in Miri takes minutes; the same checks run natively")]
fn a_pack_signed_with_another_key_or_unsigned_is_refused_when_the_code_has_a_key() {
    let key = SigningKey::from_seed([5; 32]);
    let other = SigningKey::from_seed([6; 32]);
    let files = params(&[A, B]);
    let pack: &'static Pack<2> = keep(Pack::new(files, [1; 32], Some(key.public())));
    let good = pack_of(&[A, B], [1; 32], 0, Some(&key));
    assert_eq!(FlashArchive::open(&good, pack).unwrap().bytes(&files[0]).unwrap(), A);
    let forged = pack_of(&[A, B], [1; 32], 0, Some(&other));
    assert_eq!(FlashArchive::open(&forged, pack).unwrap_err().kind, ParamErrorKind::BadSignature);
    let unsigned = pack_of(&[A, B], [1; 32], 0, None);
    assert_eq!(FlashArchive::open(&unsigned, pack).unwrap_err().kind, ParamErrorKind::Unsigned);
    // Consistent hashes do not make a pack genuine: one weight changed and every hash redone.
    let mut changed = good.clone();
    let at = changed.windows(B.len()).position(|w| w == B).unwrap();
    changed[at] ^= 1;
    let body = xxh64(&changed[1024..changed.len() - 2048]);
    let mut head: [u8; 1024] = changed[..1024].try_into().unwrap();
    let mut h = mlf_pack::PackHeader::decode(&head).unwrap();
    h.body_xxh64 = body;
    h.encode(&mut head);
    changed[..1024].copy_from_slice(&head);
    assert_eq!(FlashArchive::open(&changed, pack).unwrap_err().kind, ParamErrorKind::BadSignature);
    // Without a key in the code, signatures are not checked.
    let keyless: &'static Pack<2> = keep(Pack::new(files, [1; 32], None));
    assert!(FlashArchive::open(&forged, keyless).is_ok());
}

#[test]
fn slots_open_the_newer_valid_pack_and_fall_back_from_any_damage_to_its_header() {
    let files = params(&[A, B]);
    let pack: &'static Pack<2> = keep(Pack::new(files, [1; 32], None));
    let old = pack_of(&[A, B], [1; 32], 4, None);
    let new = pack_of(&[B, A], [1; 32], 5, None);
    let s = Slots::open(&old, &new, pack).unwrap();
    assert_eq!((s.active(), s.sequence(), s.refused()), (Slot::B, 5, None));
    let s = Slots::open(&new, &old, pack).unwrap();
    assert_eq!((s.active(), s.sequence()), (Slot::A, 5));
    // Every byte of the newer slot's header (its tar header and its block), and one weight byte.
    let weight = new.windows(B.len()).position(|w| w == B).unwrap() + 10;
    let stride = if cfg!(miri) { 97 } else { 1 };
    for i in (0..1024).step_by(stride).chain([weight]) {
        let mut damaged = new.clone();
        damaged[i] ^= 0xff;
        let mut s = Slots::open(&old, &damaged, pack).unwrap_or_else(|e| panic!("byte {i}: {e}"));
        assert_eq!((s.active(), s.sequence()), (Slot::A, 4), "byte {i}");
        assert_eq!(s.refused().map(|(slot, _)| slot), Some(Slot::B), "byte {i}");
        assert_eq!(load(&mut s, &files[1]).unwrap(), B, "byte {i}");
    }
    // Another model's pack in the newer slot, then nothing valid at all.
    let foreign = pack_of(&[A, C], [2; 32], 9, None);
    let s = Slots::open(&foreign, &old, pack).unwrap();
    assert!(matches!(s.refused(), Some((Slot::A, e)) if matches!(e.kind, ParamErrorKind::ModelMismatch { .. })));
    let e = Slots::open(&foreign, &[0u8; 1024], pack).unwrap_err();
    assert!(matches!(e.a.kind, ParamErrorKind::ModelMismatch { .. }), "{e}");
    assert_eq!(e.b.kind, ParamErrorKind::PackHeader);
}

/// A ustar header for `name` with the prefix field `prefix` (type `kind`, `size` bytes).
fn header(prefix: &str, name: &str, kind: u8, size: usize) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
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

fn tar_of(entries: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (prefix, name, data) in entries {
        out.extend_from_slice(&header(prefix, name, b'0', data.len()));
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// Issue 25 (4): `cargo mlf inspect` accepted a member whose ustar prefix is `.`
/// (`./params/<id>.bin`) and the device's and host's readers could not find it. Every reader now
/// reads names with one function: what one accepts, the others read as the same member, and a
/// name that is not plain is refused by all.
#[test]
#[cfg_attr(miri, ignore = "mlf-build's reader is not part of the runtime")]
fn one_name_rule_for_inspect_the_host_and_the_device() {
    let a = pref(A);
    let member = format!("params/{}.bin", a.id);
    let cfg = format!(
        "{{\"format\": \"mlf-params\", \"params\": {{\"{}\": {{\"file\": \"{member}\", \"bytes\": 8, \"xxh64\": \"{:016x}\", \"dtype\": \"uint8\", \"shape\": [8]}}}}}}",
        a.id, a.xxh64
    );
    let read = |bytes: &[u8]| {
        let inspect = mlf_build::__private::read::param_pack::read_pack(
            std::path::Path::new("p.tar"),
            mlf_build::__private::bytes::Bytes::new(bytes.to_vec()),
        )
        .and_then(|archive| mlf_build::__private::read::param_pack::check_folder(&archive).map(drop));
        let flash = FlashArchive::new(bytes).and_then(|f| f.bytes(&a).map(<[u8]>::to_vec));
        let host = PackedArchive::from_bytes("p.tar", bytes.to_vec()).and_then(|mut p| {
            let mut buf = vec![0u8; 8];
            p.load(&a, &mut buf).map(|()| buf)
        });
        (inspect.is_ok(), flash.map_err(|e| e.kind), host.map_err(|e| e.kind))
    };
    let dotted =
        [(".", member.as_str()), ("./", member.as_str()), ("", &format!("./{member}")), ("params", &member[7..])];
    for (prefix, name) in dotted {
        let bytes = tar_of(&[("", "configure.json", cfg.as_bytes()), (prefix, name, A)]);
        assert_eq!(read(&bytes), (true, Ok(A.to_vec()), Ok(A.to_vec())), "prefix {prefix:?}, name {name:?}");
    }
    let not_plain = [
        ("", format!("params//{}.bin", a.id)),
        ("params", format!("./{}.bin", a.id)),
        ("", format!("params/./{}.bin", a.id)),
    ];
    for (prefix, name) in &not_plain {
        let bytes = tar_of(&[("", "configure.json", cfg.as_bytes()), (prefix, name, A)]);
        let invalid = || Err(ParamErrorKind::ArchiveInvalid);
        assert_eq!(read(&bytes), (false, invalid(), invalid()), "prefix {prefix:?}, name {name:?}");
    }
}

/// Generated modules give the order of their files by identifier (`Pack::ordered`, checked in
/// linear time); it finds what `Pack::new`, which sorts, finds; a wrong order is refused.
#[test]
fn an_order_given_by_the_build_step_is_checked() {
    let files = params(&[A, B]);
    let sorted = Pack::new(files, [1; 32], None);
    let by_id = if files[0].id < files[1].id { [0, 1] } else { [1, 0] };
    let given: &'static Pack<2> = keep(Pack::ordered(files, [1; 32], None, by_id));
    let bytes = pack_of(&[A, B], [1; 32], 0, None);
    assert_eq!(FlashArchive::open(&bytes, given).unwrap().bytes(&files[1]).unwrap(), B);
    assert!(FlashArchive::open(&bytes, keep(sorted)).is_ok());
    let wrong = std::panic::catch_unwind(|| Pack::ordered(files, [1; 32], None, [by_id[1], by_id[0]]));
    assert!(wrong.is_err());
    let twice = std::panic::catch_unwind(|| Pack::ordered(files, [1; 32], None, [0, 0]));
    assert!(twice.is_err());
}
