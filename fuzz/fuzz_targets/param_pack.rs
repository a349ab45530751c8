//! Parameter packs on arbitrary bytes, read by every reader of packs: the build side's
//! (`cargo mlf inspect`, `pack`), the host runtime's (`PackedArchive`) and the device's
//! (`FlashArchive::new`, and `mlf_pack::check` with the covered entries, which
//! `FlashArchive::open` indexes). None may panic, and they must agree: every parameter the build
//! side accepts is the same bytes on the device; whatever a runtime reader delivers, the other
//! does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mlf_runtime::params::{FlashArchive, PackedArchive, ParamRef, ParamSource};

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.tar");
    let built = mlf_build::__private::read::param_pack::read_pack(path, mlf_build::__private::bytes::Bytes::new(data.to_vec()));
    let flash = FlashArchive::new(data);
    let packed = PackedArchive::from_bytes("fuzz.tar", data.to_vec());
    let Ok(archive) = built else { return };
    let Ok(entries) = mlf_build::__private::read::param_pack::check_folder(&archive) else { return };
    // The build side accepted the pack and every parameter: so must the device and the host.
    let flash = flash.expect("FlashArchive refuses a pack inspect accepts");
    // What `FlashArchive::open` reads: the checked pack's covered entries, the same members.
    let checked = mlf_pack::check(data, None, None).expect("the pack check refuses a pack inspect accepts");
    for entry in checked.entries(data) {
        let entry = entry.expect("a covered entry refused that inspect accepts");
        let name = String::from_utf8_lossy(&entry.name.bytes().collect::<Vec<u8>>()).into_owned();
        if entry.is_file {
            assert_eq!(archive.get(&name).map(|b| b.as_slice()), Some(entry.data), "open and inspect read {name} apart");
        }
    }
    let mut packed = packed.expect("PackedArchive refuses a pack inspect accepts");
    for e in &entries {
        let id = intern(&e.id);
        let p = ParamRef { id, bytes: e.bytes as usize, xxh64: u64::from_str_radix(&e.xxh64, 16).unwrap() };
        let on_device = flash.bytes(&p).expect("the device cannot read a parameter inspect accepts");
        assert_eq!(on_device, archive.get(&e.file).unwrap().as_slice(), "device and inspect read other bytes");
        let mut buf = vec![0u8; p.bytes];
        packed.load(&p, &mut buf).expect("the host cannot read a parameter inspect accepts");
        assert_eq!(buf, on_device);
    }
});

/// `ParamRef` holds `&'static str` (as generated code does): identifiers are interned once (the
/// set stays reachable, so leak detection is quiet).
fn intern(id: &str) -> &'static str {
    static IDS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut ids = IDS.lock().unwrap();
    if let Some(i) = ids.iter().find(|i| **i == id) {
        return i;
    }
    let leaked: &'static str = Box::leak(id.to_string().into_boxed_str());
    ids.push(leaked);
    leaked
}
