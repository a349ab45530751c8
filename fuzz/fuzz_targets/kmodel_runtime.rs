//! The runtime kmodel parser (`mlf_kmodel::Model::parse`, the parser `mlf-runtime` uses) on
//! arbitrary bytes: must never panic. When the bytes parse as a small model, decoding its
//! steps and running it must not panic either.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mlf_kmodel::{Memory, Model, Options, Step};

fuzz_target!(|data: &[u8]| {
    let _ = mlf_kmodel::identify(data);
    if let Ok(h) = mlf_kmodel::v5::header(data) {
        let _ = mlf_kmodel::v5::walk(data, &h, |_, pools, secs| {
            pools.for_each(drop);
            secs.for_each(drop);
        });
    }
    let Ok(m) = Model::parse(data) else { return };
    let mut steps = vec![Step::Empty; m.steps()];
    m.decode_into(&mut steps).expect("a parsed model decodes");
    let req = m.requirements();
    // Run only what is cheap: small memories and few MACs.
    if req.main > 1 << 20 || req.kpu > 1 << 21 || req.scratch > 1 << 20 || req.macs > 1 << 22 || m.input().bytes > 1 << 20 {
        return;
    }
    let mut main = vec![0u8; req.main as usize];
    let mut kpu = vec![0u8; req.kpu as usize];
    let mut scratch = vec![0u8; req.scratch as usize + 8];
    let input = vec![1u8; m.input().bytes as usize];
    let _ = mlf_kmodel::run(&m, &steps, Memory { main: &mut main, kpu: &mut kpu, scratch: &mut scratch }, &input, Options::default());
});
