//! Golden memory plans: every graph fixture's plan (layout, arena size, every buffer's offset)
//! and synthetic chains of 100 and 1,000 operators, as planned before planning became
//! O(n log n). A change of any offset shows up here, and so do the tensor-level liveness bound
//! and the operators whose output takes an input's bytes (in-place operators).

use mlf_build::__private::plan::graph::plan;
use mlf_build::Executor;
use mlf_fixtures::{fixtures_or_skip, mlf_fixtures};

/// The plan of the graph model at `path` as text: one line per placed buffer.
fn plan_text(path: &std::path::Path) -> Option<String> {
    let desc = mlf_build::open(path).unwrap();
    let Executor::Graph(g) = &desc.executor else { return None };
    let p = plan(&desc, g, 16).unwrap();
    let mut s = format!(
        "layout {}, arena {} bytes (storage-id layout {}; tensor-level liveness bound {})\n",
        p.layout, p.arena_bytes, p.storage_id_layout_bytes, p.tensor_bound
    );
    for ip in &p.in_place {
        s.push_str(&format!("in place: node {} may write entry {} over entry {}\n", ip.node, ip.output, ip.input));
    }
    for b in &p.buffers {
        s.push_str(&format!("{:>8} {:>7} [{}, {}] {}\n", b.offset, b.size, b.first, b.last, b.name));
    }
    let scratch: Vec<String> = p.calls.iter().map(|c| format!("{}+{}", c.scratch.0, c.scratch.1)).collect();
    s.push_str(&format!("scratch windows: {}\n", scratch.join(" ")));
    Some(s)
}

#[test]
fn every_graph_fixture() {
    let Some(root) = fixtures_or_skip("plan_golden::every_graph_fixture") else { return };
    for fx in mlf_fixtures(&root) {
        if let Some(text) = plan_text(&fx.model) {
            insta::assert_snapshot!(format!("fixture_{}", fx.name), text);
        }
    }
}

#[test]
fn digits_in_repository() {
    let text = plan_text(&mlf_fixtures::digits_tar()).unwrap();
    insta::assert_snapshot!("digits", text);
}

#[test]
fn synthetic_chains() {
    let dir = tempfile::tempdir().unwrap();
    for ops in [100, 1000] {
        let path = dir.path().join(format!("chain-{ops}.tar"));
        mlf_fixtures::write_tar(&path, &mlf_fixtures::synth::chain(ops, 4096));
        insta::assert_snapshot!(format!("synthetic_chain_{ops}"), plan_text(&path).unwrap());
    }
    // 10,000 operators: the first line and a digest of the whole plan (too long to keep).
    let path = dir.path().join("chain-10000.tar");
    mlf_fixtures::write_tar(&path, &mlf_fixtures::synth::chain(10_000, 4096));
    let text = plan_text(&path).unwrap();
    let digest = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let summary = format!("{}\nFNV-1a of the whole plan: {digest:016x}", text.lines().next().unwrap_or_default());
    insta::assert_snapshot!("synthetic_chain_10000", summary);
}

/// The switch: without the kernels' in-place proofs (`Model::in_place(false)`), KWS plans every
/// tensor apart, at the tensor-level liveness bound; with them (the default) it is below it.
#[test]
fn in_place_switch() {
    let Some(root) = fixtures_or_skip("plan_golden::in_place_switch") else { return };
    let mut desc = mlf_build::open(root.join("mlf/kws-int8-graph/model.tar")).unwrap();
    let Executor::Graph(g) = desc.executor.clone() else { panic!("a graph model") };
    let on = plan(&desc, &g, 16).unwrap();
    assert_eq!((on.layout, on.arena_bytes, on.tensor_bound), ("liveness, in place", 72192, 88192));
    desc.without_in_place();
    let off = plan(&desc, &g, 16).unwrap();
    assert_eq!((off.layout, off.arena_bytes, off.tensor_bound), ("liveness", 88192, 88192));
    assert!(off.in_place.is_empty() && !on.in_place.is_empty());
}
