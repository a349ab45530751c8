//! Archives derived from real ones by changing one source. One that contradicts itself is
//! refused naming both sources: the graph config against metadata.json, the relay signature and
//! the parameters, an AOT model's tensors against its interface header; zero-sized and
//! overflowing graph entries are errors; dtypes the runtime cannot run are refused by the reader
//! (so by `inspect` and the build) naming the tensor and the dtype.

use std::path::Path;

use mlf_build::__private::bytes::Bytes;
use mlf_build::__private::read::archive::Archive;
use mlf_build::{Error, ErrorKind};

use mlf_fixtures::digits_members;

type Members = Vec<(String, Vec<u8>)>;

fn tar_of(members: &Members) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in members {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, format!("./{name}"), data.as_slice()).unwrap();
    }
    b.into_inner().unwrap()
}

fn members_of(tar_path: &Path) -> Members {
    use std::io::Read;
    let mut archive = tar::Archive::new(std::fs::File::open(tar_path).unwrap());
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.header().entry_type() == tar::EntryType::Regular {
            let name = entry.path().unwrap().to_string_lossy().trim_start_matches("./").to_string();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            out.push((name, data));
        }
    }
    out
}

fn read(members: &Members) -> Result<mlf_build::ModelDesc, Error> {
    let archive = Archive::from_tar_bytes("derived.tar", Bytes::new(tar_of(members)))?;
    mlf_build::__private::read::mlf::read(&archive, &Default::default())
}

/// `members` with member `name`'s text passed through `edit` (which must change it).
fn edited(mut members: Members, name: &str, edit: impl FnOnce(&str) -> String) -> Members {
    let m = members.iter_mut().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no member {name}"));
    let before = String::from_utf8(m.1.clone()).unwrap();
    let after = edit(&before);
    assert_ne!(before, after, "the edit of {name} changed nothing");
    m.1 = after.into_bytes();
    members
}

fn graph_edited(f: impl FnOnce(&mut serde_json::Value)) -> Members {
    edited(digits_members(), "executor-config/graph/default.graph", |text| {
        let mut g: serde_json::Value = serde_json::from_str(text).unwrap();
        f(&mut g);
        serde_json::to_string(&g).unwrap()
    })
}

fn mismatch(members: &Members) -> String {
    let e = read(members).expect_err("a contradiction must be refused");
    match e.kind {
        ErrorKind::Mismatch(ref s) => s.clone(),
        _ => panic!("expected a mismatch, got {e}"),
    }
}

#[test]
fn the_base_archives_read() {
    read(&digits_members()).unwrap();
    read(&members_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/digits-aot-c.tar"))).unwrap();
}

#[test]
fn graph_input_against_metadata() {
    // The input's graph entry (entry 0) halved: metadata.json still says 256 bytes.
    let s = mismatch(&graph_edited(|g| g["attrs"]["shape"][1][0] = serde_json::json!([1, 32])));
    assert!(s.contains("input \"pixels\"") && s.contains("graph config") && s.contains("metadata.json"), "{s}");
    assert!(s.contains("[1, 32]") && s.contains("256 bytes"), "{s}");
}

#[test]
fn graph_output_dtype_against_metadata() {
    let s = mismatch(&graph_edited(|g| g["attrs"]["dltype"][1][7] = "int32".into()));
    assert!(s.contains("output") && s.contains("int32") && s.contains("metadata.json"), "{s}");
}

#[test]
fn graph_output_against_relay_signature() {
    // The digits relay text has no types on its result; this one states the return type, as
    // annotated relay text does. Same byte count (metadata agrees), different shape: only the
    // relay signature can tell.
    let typed = |m: Members| {
        edited(m, "src/default.relay", |t| {
            t.replacen("%p3: Tensor[(10), float32]) {", "%p3: Tensor[(10), float32]) -> Tensor[(1, 10), float32] {", 1)
        })
    };
    read(&typed(digits_members())).unwrap();
    let s = mismatch(&typed(graph_edited(|g| g["attrs"]["shape"][1][7] = serde_json::json!([10, 1]))));
    assert!(s.contains("output 0") && s.contains("[10, 1]") && s.contains("relay signature"), "{s}");
    assert!(s.contains("[1, 10]"), "{s}");
}

#[test]
fn graph_input_against_relay_signature() {
    let members = edited(digits_members(), "src/default.relay", |t| {
        t.replacen("%pixels: Tensor[(1, 64), float32]", "%pixels: Tensor[(64, 1), float32]", 1)
    });
    let s = mismatch(&members);
    assert!(s.contains("input \"pixels\"") && s.contains("relay signature") && s.contains("[64, 1]"), "{s}");
}

#[test]
fn graph_parameter_against_params() {
    // Entry 1 is parameter p0 ([4, 64, 8] in .params).
    let s = mismatch(&graph_edited(|g| g["attrs"]["shape"][1][1] = serde_json::json!([4, 64, 4])));
    assert!(s.contains("parameter p0") && s.contains("parameters/default.params") && s.contains("graph"), "{s}");
}

#[test]
fn aot_tensors_against_interface_header() {
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/digits-aot-c.tar");
    let h = "codegen/host/include/tvmgen_default.h";
    let input = edited(members_of(&tar), h, |t| t.replace("PIXELS_SIZE 256", "PIXELS_SIZE 512"));
    let s = mismatch(&input);
    // Both sources named, with both sizes (the AOT type resolution of read/mlf finds it first).
    assert!(s.contains("pixels") && s.contains(h) && s.contains("TVMGEN_DEFAULT_PIXELS_SIZE"), "{s}");
    assert!(s.contains("256 bytes") && s.contains("512"), "{s}");
    let output = edited(members_of(&tar), h, |t| t.replace("OUTPUT_SIZE 40", "OUTPUT_SIZE 4"));
    let s = mismatch(&output);
    assert!(s.contains("output") && s.contains("TVMGEN_DEFAULT_OUTPUT_SIZE") && s.contains("40 bytes"), "{s}");
}

#[test]
fn zero_sized_intermediate_entry() {
    // Entry 3: the first dense layer's output, read by the next kernel.
    let e = read(&graph_edited(|g| g["attrs"]["shape"][1][3] = serde_json::json!([1, 0]))).unwrap_err();
    assert!(e.to_string().contains("no elements") && e.to_string().contains("default.graph"), "{e}");
}

#[test]
fn overflowing_entry() {
    let huge = serde_json::json!([1u64 << 40, 1u64 << 40]);
    let e = read(&graph_edited(|g| g["attrs"]["shape"][1][3] = huge)).unwrap_err();
    assert!(e.to_string().contains("more bytes than a 64-bit size holds"), "{e}");
}

/// The digits graph with entry `eid`'s dtype set to `dtype`, and metadata.json's record of the
/// input or output (`io`: `("inputs", "pixels", bytes)`) and the relay signature agreeing with it.
fn with_dtype(eid: usize, dtype: &str, io: Option<(&str, &str, u64)>) -> Members {
    let mut m = graph_edited(|g| g["attrs"]["dltype"][1][eid] = dtype.into());
    if let Some((list, name, bytes)) = io {
        m = edited(m, "metadata.json", |t| {
            let mut j: serde_json::Value = serde_json::from_str(t).unwrap();
            let rec = &mut j["modules"]["default"]["memory"]["functions"]["main"][0][list][name];
            rec["dtype"] = dtype.into();
            rec["size"] = bytes.into();
            serde_json::to_string(&j).unwrap()
        });
        if list == "inputs" {
            let typed = format!("%pixels: Tensor[(1, 64), {dtype}]");
            m = edited(m, "src/default.relay", |t| t.replacen("%pixels: Tensor[(1, 64), float32]", &typed, 1));
        }
    }
    m
}

fn unsupported_dtype(members: &Members) -> String {
    let e = read(members).expect_err("a dtype the runtime cannot run must be refused");
    match e.kind {
        ErrorKind::UnsupportedDtype(ref s) => s.clone(),
        _ => panic!("expected an unsupported dtype, got {e}"),
    }
}

#[test]
fn float16_input() {
    let s = unsupported_dtype(&with_dtype(0, "float16", Some(("inputs", "pixels", 128))));
    assert!(s.contains("input \"pixels\"") && s.contains("float16 is not supported"), "{s}");
}

#[test]
fn bfloat16_input() {
    let s = unsupported_dtype(&with_dtype(0, "bfloat16", Some(("inputs", "pixels", 128))));
    assert!(s.contains("bfloat16 is not supported"), "{s}");
}

#[test]
fn bool_output() {
    let s = unsupported_dtype(&with_dtype(7, "bool", Some(("outputs", "output", 10))));
    assert!(s.contains("output \"output\"") && s.contains("bool tensors are not supported"), "{s}");
}

#[test]
fn vector_lanes_input() {
    // float32x4 over [1, 64]: 1 KiB, as metadata now says.
    let s = unsupported_dtype(&with_dtype(0, "float32x4", Some(("inputs", "pixels", 1024))));
    assert!(s.contains("float32x4 is a vector of 4 float32 lanes"), "{s}");
}

#[test]
fn int3_intermediate_entry() {
    let s = unsupported_dtype(&with_dtype(3, "int3", None));
    assert!(s.contains("graph entry 3") && s.contains("int3 is a 3-bit integer"), "{s}");
}

#[test]
fn inspect_refuses_what_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("float16.tar");
    std::fs::write(&path, tar_of(&with_dtype(0, "float16", Some(("inputs", "pixels", 128))))).unwrap();
    let e = mlf_build::__private::inspect::inspect_path(&path, &Default::default()).unwrap_err().to_string();
    assert!(e.contains("float16.tar") && e.contains("float16 is not supported"), "{e}");
}

/// Graph entry `eid` of `members`' graph config given shape `shape`.
fn entry_shape_edited(members: Members, eid: usize, shape: serde_json::Value) -> Members {
    let gname = "executor-config/graph/default.graph";
    edited(members, gname, |text| {
        let mut g: serde_json::Value = serde_json::from_str(text).unwrap();
        g["attrs"]["shape"][1][eid] = shape;
        serde_json::to_string(&g).unwrap()
    })
}

#[test]
fn graph_intermediate_entry_against_its_kernel_stores() {
    // Entry 3 is node 3's output ([1, 32] float32, 128 bytes), which
    // tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu writes as its argument 3 (after
    // its inputs pixels, p0, p1). Halved in graph.json, nothing else records it: only the
    // kernel's C can tell that the arena slot planned from it would be overrun.
    let s = mismatch(&entry_shape_edited(digits_members(), 3, serde_json::json!([1, 16])));
    assert!(s.contains("tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu"), "{s}");
    assert!(s.contains("argument 3") && s.contains("graph entry 3"), "{s}");
    assert!(s.contains("stores 128 bytes") && s.contains("64 bytes"), "{s}");
    assert!(s.contains("executor-config/graph/default.graph"), "{s}");
    // Larger than the kernel writes is not refused by this check.
    read(&entry_shape_edited(digits_members(), 3, serde_json::json!([1, 32]))).unwrap();
}

#[test]
fn kws_graph_intermediate_entry_against_its_kernel_stores() {
    let Some(root) = mlf_fixtures::fixtures_or_skip("kws_graph_intermediate_entry_against_its_kernel_stores") else {
        return;
    };
    let members = members_of(&root.join("mlf/kws-int8-graph/model.tar"));
    let graph: serde_json::Value =
        serde_json::from_slice(&members.iter().find(|(n, _)| n == "executor-config/graph/default.graph").unwrap().1)
            .unwrap();
    // The first conv2d node's output entry, its channels halved.
    let nodes = graph["nodes"].as_array().unwrap();
    let nid = nodes.iter().position(|n| n["name"].as_str().unwrap().contains("conv2d")).unwrap();
    let eid = graph["node_row_ptr"][nid].as_u64().unwrap() as usize;
    let mut shape: Vec<u64> =
        graph["attrs"]["shape"][1][eid].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    let func = nodes[nid]["attrs"]["func_name"].as_str().unwrap().to_string();
    let dtype = graph["attrs"]["dltype"][1][eid].as_str().unwrap();
    let elem = if dtype.ends_with("32") {
        4
    } else if dtype.ends_with("16") {
        2
    } else {
        1
    };
    let full: u64 = shape.iter().product::<u64>() * elem;
    *shape.last_mut().unwrap() /= 2;
    let arg = nodes[nid]["inputs"].as_array().unwrap().len();
    let s = mismatch(&entry_shape_edited(members, eid, serde_json::json!(shape)));
    assert!(s.contains(&func) && s.contains(&format!("argument {arg}")), "{s}");
    assert!(s.contains(&format!("stores {full} bytes")) && s.contains(&format!("{} bytes)", full / 2)), "{s}");
    assert!(s.contains(&format!("graph entry {eid}")), "{s}");
}
