//! kmodel V5 headers: the v1.0.0+ 32-byte layout (the fixture) and the older 24-byte one,
//! derived here from the fixture by rewriting its headers the way nncase wrote them before
//! 2021-08-18 (skipped when ../shared/fixtures is absent).

use mlf_kmodel::v5::{self, Header};
use mlf_kmodel::{KmodelError, Model, Version, identify};

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

/// The fixture rewritten with the old layout: a 24-byte model header {KMDL, 5, flags, alignment,
/// modules, main_module}; the module header {type[16], payload size, mempools, inputs, outputs,
/// sections, reserved}; its payload: the mempools, function 0's input and output memory ranges
/// and shapes (old modules carry their I/O themselves), then the sections unchanged.
fn old_layout(new: &[u8]) -> Vec<u8> {
    let h = v5::header(new).unwrap();
    assert!(h.new_layout && h.modules == 1);
    let m = 32; // the module
    let (mempools, shared, sections, functions) =
        (u32_at(new, m + 28), u32_at(new, m + 32), u32_at(new, m + 36), u32_at(new, m + 40));
    assert_eq!((shared, functions), (0, 1), "the fixture has one function and no shared pools");
    let pools = &new[m + 48..m + 48 + 8 * mempools as usize];
    let f = m + 48 + 8 * mempools as usize; // function 0: 32-byte header, then its I/O tables
    let (f_size, inputs, outputs) = (u32_at(new, f + 4) as usize, u32_at(new, f + 16), u32_at(new, f + 20));
    let io = &new[f + 32..f + f_size];
    let secs = &new[f + f_size..m + u32_at(new, m + 24) as usize];
    let mut payload: Vec<u8> = Vec::new();
    payload.extend(pools);
    payload.extend(io);
    payload.extend(secs);
    let mut out: Vec<u8> = Vec::new();
    for w in [u32::from_le_bytes(*b"LDMK"), 5, h.flags, h.alignment, 1, 0] {
        out.extend(w.to_le_bytes());
    }
    out.extend(&new[m..m + 16]); // type
    for w in [payload.len() as u32, mempools, inputs, outputs, sections, 0] {
        out.extend(w.to_le_bytes());
    }
    out.extend(payload);
    out
}

/// (type, version, size, functions, mempools, sections) of every module.
type Summary = Vec<(Vec<u8>, u32, u32, u32, Vec<(u8, u32)>, Vec<(Vec<u8>, u32, u32)>)>;

fn walk(bytes: &[u8], h: &Header) -> Result<(usize, Summary), KmodelError> {
    let mut mods = Vec::new();
    let end = v5::walk(bytes, h, |m, pools, secs| {
        let pools = pools.map(|p| (p.location, p.size)).collect();
        let secs = secs.map(|s| (s.name.to_vec(), s.flags, s.body_size)).collect();
        mods.push((m.kind.to_vec(), m.version, m.size, m.functions, pools, secs));
    })?;
    Ok((end, mods))
}

#[test]
fn both_v5_header_layouts_are_told_apart_and_read() {
    let Some(dir) = mlf_fixtures::fixtures_or_skip("V5 header layouts") else { return };
    let new = std::fs::read(dir.join("kmodel/v5-mnist-cpu/mnist.kmodel")).unwrap();
    let old = old_layout(&new);
    for (what, bytes, new_layout, header_size) in [("v1.0.0+", &new, true, 32), ("old", &old, false, 24)] {
        assert_eq!(identify(bytes), Ok(Version::V5));
        assert!(matches!(Model::parse(bytes), Err(KmodelError::V5NotRunnable)), "{what}");
        let h = v5::header(bytes).unwrap();
        assert_eq!((h.new_layout, h.modules_at, h.alignment, h.modules), (new_layout, header_size, 8, 1), "{what}");
        let (end, mods) = walk(bytes, &h).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(end, bytes.len(), "{what}: the module ends the file");
        let (kind, _, size, _, pools, secs) = &mods[0];
        assert_eq!(kind.as_slice(), b"stackvm");
        assert_eq!(*size as usize, bytes.len() - header_size, "{what}: module size, header included");
        assert_eq!(pools, &[(2, 0), (3, 51008)], "{what}: mempools (rdata 0, data 51008)");
        assert_eq!(secs, &[(b".rdata".to_vec(), 0, 0), (b".text".to_vec(), 0, 1221)], "{what}: sections");
        eprintln!("{what}: {} bytes, header {header_size}, module {kind:?} {size} bytes", bytes.len());
    }
    // The old layout has no module version and no functions.
    let (_, mods) = walk(&old, &v5::header(&old).unwrap()).unwrap();
    assert_eq!((mods[0].1, mods[0].3), (0, 0));
    // Damage in the old layout is an error, not a panic: every truncation.
    for n in 0..old.len() {
        let cut = &old[..n];
        if let Ok(h) = v5::header(cut) {
            assert!(walk(cut, &h).is_err(), "a {n}-byte prefix walked");
        }
    }
}
