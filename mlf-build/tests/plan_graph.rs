//! Graph memory plans of every graph fixture: valid, never larger than TVM's storage-id layout
//! of the same buffers, and far below what TVM's executor allocates.

use mlf_build::__private::plan::graph::{Slot, plan};
use mlf_build::Executor;
use mlf_fixtures::{fixtures_or_skip, mlf_fixtures};

fn check(path: &std::path::Path, name: &str) {
    let desc = mlf_build::open(path).unwrap();
    let Executor::Graph(g) = &desc.executor else { return };
    let p = plan(&desc, g, 16).unwrap();
    eprintln!(
        "{name:<42} arena {:>7} ({:<10}) storage-id layout {:>7} | TVM: storage {:>7} (params {:>7}, inputs {:>5}, activations {:>7}) + workspace {:>6}",
        p.arena_bytes,
        p.layout,
        p.storage_id_layout_bytes,
        p.tvm.storage_bytes,
        p.tvm.param_bytes,
        p.tvm.input_bytes,
        p.tvm.activation_bytes,
        p.tvm.workspace_bytes
    );
    assert!(p.arena_bytes <= p.storage_id_layout_bytes);
    assert!(p.arena_bytes <= p.tvm.storage_bytes + p.tvm.workspace_bytes, "{name}: more RAM than TVM's plan");
    // Every call argument has a place.
    for c in &p.calls {
        for &e in &c.args {
            assert_ne!(p.slots[e], Slot::Unused, "{name}: call {} argument {e}", c.func);
        }
    }
}

#[test]
fn digits_in_repository() {
    check(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar"),
        "digits (repository)",
    );
}

#[test]
fn every_graph_fixture() {
    let Some(root) = fixtures_or_skip("every_graph_fixture") else { return };
    for fx in mlf_fixtures(&root) {
        check(&fx.model, &fx.name);
    }
}
