//! `configure.json` on arbitrary bytes, inside an otherwise valid pack with one parameter: the
//! build side's check and the runtime's parser must never panic, and a configuration the build
//! side accepts must be one the runtime reads.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mlf_runtime::params::{PackedArchive, ParamRef, ParamSource};

const DATA: &[u8] = &[1, 2, 3, 4, 5, 6, 7, 8];

fn pack(config: &[u8]) -> Vec<u8> {
    let id = format!("p{:016x}", mlf_runtime::params::xxh64(DATA));
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in [("configure.json".to_string(), config), (format!("params/{id}.bin"), DATA)] {
        let mut h = tar::Header::new_ustar();
        h.set_path(&name).unwrap();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let bytes = pack(data);
    let path = std::path::Path::new("fuzz.tar");
    let archive = mlf_build::__private::read::param_pack::read_pack(path, mlf_build::__private::bytes::Bytes::new(bytes.clone()))
        .expect("a pack of two plain members");
    let checked = mlf_build::__private::read::param_pack::check_folder(&archive);
    let runtime = PackedArchive::from_bytes("fuzz.tar", bytes);
    if let Ok(entries) = checked {
        let mut runtime = runtime.expect("the runtime refuses a configuration inspect accepts");
        for e in entries {
            let id = intern(&e.id);
            let p = ParamRef { id, bytes: e.bytes as usize, xxh64: u64::from_str_radix(&e.xxh64, 16).unwrap() };
            let mut buf = vec![0u8; p.bytes];
            runtime.load(&p, &mut buf).expect("the runtime cannot read a parameter inspect accepts");
        }
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
