//! Damaged inputs: each one is refused with its specific error, naming the file, the member and
//! the field; nothing panics and nothing is written anywhere.

use std::path::Path;

use mlf_build::__private::bytes::Bytes;
use mlf_build::__private::read::archive::Archive;
use mlf_build::{Error, ErrorKind};

use mlf_fixtures::digits_members;

fn set(members: &mut Vec<(String, Vec<u8>)>, name: &str, data: impl Into<Vec<u8>>) {
    members.retain(|(n, _)| n != name);
    members.push((name.to_string(), data.into()));
}

fn remove(members: &mut Vec<(String, Vec<u8>)>, name: &str) {
    members.retain(|(n, _)| n != name);
}

fn get(members: &[(String, Vec<u8>)], name: &str) -> Vec<u8> {
    members.iter().find(|(n, _)| n == name).unwrap().1.clone()
}

/// Writes members as a tar the way TVM does (`./` prefixes).
fn tar_of(members: &[(String, Vec<u8>)]) -> Vec<u8> {
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

/// A raw ustar header block with an arbitrary name (the tar crate refuses to write `..`).
fn raw_entry(name: &str, kind: u8, data: &[u8], link: &str) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

fn with_raw_entry(entry: Vec<u8>) -> Vec<u8> {
    let mut t = tar_of(&digits_members());
    // Insert before the two zero end blocks.
    let end = t.len() - 1024;
    t.splice(end..end, entry);
    t
}

fn read_tar(bytes: Vec<u8>) -> Result<mlf_build::ModelDesc, Error> {
    let archive = Archive::from_tar_bytes("bad.tar", Bytes::new(bytes))?;
    mlf_build::__private::read::mlf::read(&archive, &Default::default())
}

fn read_members(m: &[(String, Vec<u8>)]) -> Error {
    read_tar(tar_of(m)).expect_err("must be refused")
}

fn graph_json(f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let m = digits_members();
    let mut g: serde_json::Value = serde_json::from_slice(&get(&m, "executor-config/graph/default.graph")).unwrap();
    f(&mut g);
    serde_json::to_vec(&g).unwrap()
}

fn with_graph(f: impl FnOnce(&mut serde_json::Value)) -> Error {
    let mut m = digits_members();
    set(&mut m, "executor-config/graph/default.graph", graph_json(f));
    read_members(&m)
}

fn params_bytes() -> Vec<u8> {
    get(&digits_members(), "parameters/default.params")
}

fn with_params(p: Vec<u8>) -> Error {
    let mut m = digits_members();
    set(&mut m, "parameters/default.params", p);
    read_members(&m)
}

fn assert_located(e: &Error, member: &str) {
    assert_eq!(e.file.as_deref(), Some(Path::new("bad.tar")), "{e}");
    assert_eq!(e.member.as_deref(), Some(member), "{e}");
}

#[test]
fn the_base_archive_reads() {
    read_tar(tar_of(&digits_members())).unwrap();
}

#[test]
fn empty_file() {
    let e = read_tar(Vec::new()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnknownFormat(_)), "{e}");
}

#[test]
fn text_file_is_not_a_tar() {
    let e = read_tar(b"hello, this is not a tar archive at all\n".repeat(40)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnknownFormat(ref m) if m.contains("not a tar")), "{e}");
}

#[test]
fn gzip_is_named() {
    let mut g = vec![0x1f, 0x8b, 8, 0];
    g.resize(1024, 0);
    let e = read_tar(g).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnknownFormat(ref m) if m.contains("gzip")), "{e}");
}

#[test]
fn truncated_inside_a_member() {
    let t = tar_of(&digits_members());
    for cut in [t.len() / 2, 700, t.len() - 1100] {
        let e = read_tar(t[..cut].to_vec()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::CorruptTar(_) | ErrorKind::Missing(_)), "cut at {cut}: {e}");
    }
    // Cut exactly inside the data of the last member: named as past the end.
    let e = read_tar(t[..t.len() - 1024 - 100].to_vec()).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CorruptTar(_)), "{e}");
}

#[test]
fn dot_dot_member() {
    let e = read_tar(with_raw_entry(raw_entry("./../../etc/evil", b'0', b"x", ""))).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnsafePath(ref p) if p.contains("..")), "{e}");
}

#[test]
fn absolute_member() {
    let e = read_tar(with_raw_entry(raw_entry("/etc/passwd", b'0', b"x", ""))).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnsafePath(_)), "{e}");
}

#[test]
fn symlink_member() {
    let e = read_tar(with_raw_entry(raw_entry("./codegen/link", b'2', b"", "/etc/passwd"))).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotARegularFile { what: "symbolic link", .. }), "{e}");
}

#[test]
fn hard_link_member() {
    let e = read_tar(with_raw_entry(raw_entry("./metadata2.json", b'1', b"", "./metadata.json"))).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotARegularFile { what: "hard link", .. }), "{e}");
}

#[test]
fn device_member() {
    let e = read_tar(with_raw_entry(raw_entry("./dev", b'3', b"", ""))).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotARegularFile { what: "character device", .. }), "{e}");
}

#[test]
fn missing_metadata() {
    let mut m = digits_members();
    remove(&mut m, "metadata.json");
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.starts_with("metadata.json")), "{e}");
}

#[test]
fn metadata_not_json() {
    let mut m = digits_members();
    set(&mut m, "metadata.json", b"{\"version\": 7, ".to_vec());
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Json(_)), "{e}");
    assert_located(&e, "metadata.json");
}

#[test]
fn metadata_unknown_version() {
    let mut m = digits_members();
    let meta = String::from_utf8(get(&m, "metadata.json")).unwrap().replace("\"version\": 7", "\"version\": 9");
    set(&mut m, "metadata.json", meta);
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::UnsupportedVersion(9)), "{e}");
    assert_located(&e, "metadata.json");
    assert_eq!(e.field.as_deref(), Some("version"));
}

#[test]
fn metadata_wrong_field_type() {
    let mut m = digits_members();
    let meta = String::from_utf8(get(&m, "metadata.json"))
        .unwrap()
        .replace("\"workspace_size_bytes\": 248", "\"workspace_size_bytes\": \"248\"");
    set(&mut m, "metadata.json", meta);
    let e = read_members(&m);
    assert_located(&e, "metadata.json");
    assert_eq!(e.field.as_deref(), Some("modules.default.memory.functions.main[0].workspace_size_bytes"), "{e}");
}

#[test]
fn missing_graph() {
    let mut m = digits_members();
    remove(&mut m, "executor-config/graph/default.graph");
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.contains("graph config")), "{e}");
}

#[test]
fn missing_params() {
    let mut m = digits_members();
    remove(&mut m, "parameters/default.params");
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.contains("parameters/default.params")), "{e}");
}

#[test]
fn missing_code() {
    let mut m = digits_members();
    m.retain(|(n, _)| !n.starts_with("codegen/"));
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.contains("generated code")), "{e}");
}

#[test]
fn params_wrong_magic() {
    let mut p = params_bytes();
    p[0] ^= 0xff;
    let e = with_params(p);
    assert!(matches!(e.kind, ErrorKind::BadMagic { expected: 0xF7E5_8D4F_0504_9CB7, .. }), "{e}");
    assert_located(&e, "parameters/default.params");
}

#[test]
fn params_array_magic_wrong() {
    let p = params_bytes();
    // The first NDArray magic follows the names.
    let pos = p.windows(8).position(|w| w == 0xDD5E_40F0_96B4_A13Fu64.to_le_bytes()).unwrap();
    let mut q = p.clone();
    q[pos] ^= 1;
    let e = with_params(q);
    assert!(matches!(e.kind, ErrorKind::BadMagic { expected: 0xDD5E_40F0_96B4_A13F, .. }), "{e}");
    assert!(e.field.as_deref().unwrap().starts_with("arrays[0]"), "{e}");
}

#[test]
fn params_counts_disagree() {
    let p = params_bytes();
    let pos = p.windows(8).position(|w| w == 0xDD5E_40F0_96B4_A13Fu64.to_le_bytes()).unwrap();
    let mut q = p.clone();
    q[pos - 8..pos].copy_from_slice(&3u64.to_le_bytes()); // n_arrays = 3, n_names = 4
    let e = with_params(q);
    assert!(matches!(e.kind, ErrorKind::Mismatch(ref s) if s.contains("4 names but 3 arrays")), "{e}");
}

#[test]
fn params_huge_count_is_not_allocated() {
    let mut p = params_bytes();
    p[16..24].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let e = with_params(p);
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");
}

#[test]
fn params_data_runs_past_the_end() {
    let p = params_bytes();
    let e = with_params(p[..p.len() - 10].to_vec());
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");
    assert!(e.field.as_deref().unwrap().ends_with("data"), "{e}");
}

#[test]
fn params_data_bytes_disagree_with_shape() {
    let p = params_bytes();
    let pos = p.windows(8).position(|w| w == 0xDD5E_40F0_96B4_A13Fu64.to_le_bytes()).unwrap();
    let mut q = p.clone();
    // magic, reserved, dev type, dev id, ndim=3, dtype, 3 dims → data_bytes
    let db = pos + 8 + 8 + 4 + 4 + 4 + 4 + 3 * 8;
    q[db..db + 8].copy_from_slice(&12u64.to_le_bytes());
    let e = with_params(q);
    assert!(matches!(e.kind, ErrorKind::Mismatch(_)), "{e}");
    assert!(e.field.as_deref().unwrap().ends_with("data_bytes"), "{e}");
}

#[test]
fn params_shape_differs_from_graph() {
    let e = with_graph(|g| g["attrs"]["shape"][1][1][1] = 63.into());
    assert!(matches!(e.kind, ErrorKind::Mismatch(ref s) if s.contains("parameter p0")), "{e}");
}

#[test]
fn graph_row_ptr_wrong_length() {
    let e = with_graph(|g| {
        g["node_row_ptr"].as_array_mut().unwrap().pop();
    });
    assert_eq!(e.field.as_deref(), Some("node_row_ptr"), "{e}");
    assert_located(&e, "executor-config/graph/default.graph");
}

#[test]
fn graph_input_refers_forward() {
    let e = with_graph(|g| g["nodes"][3]["inputs"][0][0] = 7.into());
    assert_eq!(e.field.as_deref(), Some("nodes[3].inputs[0]"), "{e}");
}

#[test]
fn graph_node_out_of_range() {
    let e = with_graph(|g| g["heads"][0][0] = 1000.into());
    assert_eq!(e.field.as_deref(), Some("heads[0][0]"), "{e}");
}

#[test]
fn graph_attr_count_mismatch() {
    let e = with_graph(|g| {
        g["attrs"]["dltype"][1].as_array_mut().unwrap().pop();
    });
    assert_eq!(e.field.as_deref(), Some("attrs.dltype[1]"), "{e}");
}

#[test]
fn graph_storage_id_out_of_range() {
    let e = with_graph(|g| g["attrs"]["storage_id"][1][2] = 99999.into());
    assert_eq!(e.field.as_deref(), Some("attrs.storage_id[1][2]"), "{e}");
}

#[test]
fn graph_cross_device_copy() {
    let e = with_graph(|g| g["nodes"][7]["attrs"]["func_name"] = "__copy".into());
    assert!(e.to_string().contains("__copy"), "{e}");
    assert_eq!(e.field.as_deref(), Some("nodes[7].attrs.func_name"));
}

#[test]
fn graph_unknown_dtype() {
    let e = with_graph(|g| g["attrs"]["dltype"][1][0] = "complex64".into());
    assert_eq!(e.field.as_deref(), Some("attrs.dltype[1][0]"), "{e}");
}

#[test]
fn graph_num_inputs_disagree() {
    let e = with_graph(|g| g["nodes"][3]["attrs"]["num_inputs"] = "2".into());
    assert_eq!(e.field.as_deref(), Some("nodes[3].attrs.num_inputs"), "{e}");
}

#[test]
fn graph_calls_undefined_function() {
    let e = with_graph(|g| {
        g["nodes"][7]["attrs"]["func_name"] = "tvmgen_default_fused_nowhere".into();
    });
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.contains("tvmgen_default_fused_nowhere")), "{e}");
}

#[test]
fn operator_style_archive() {
    let mut m = digits_members();
    set(
        &mut m,
        "metadata.json",
        br#"{"version":4,"model_name":"m","style":"operator","executors":[],"target":{"1":"c"},"memory":{}}"#.to_vec(),
    );
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::OperatorStyle), "{e}");
}

#[test]
fn two_modules_without_a_choice() {
    let mut m = digits_members();
    let meta: serde_json::Value = serde_json::from_slice(&get(&m, "metadata.json")).unwrap();
    let mut second = meta["modules"]["default"].clone();
    second["model_name"] = "other".into();
    let mut meta2 = meta.clone();
    meta2["modules"]["other"] = second;
    set(&mut m, "metadata.json", serde_json::to_vec(&meta2).unwrap());
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::AmbiguousModule(ref n) if n == "default, other"), "{e}");
    // The message lists the modules and names the way to choose one wherever a model is named.
    let msg = e.to_string();
    assert!(msg.contains("several modules (default, other)"), "{msg}");
    for how in ["--module NAME", ".module(\"NAME\")", "module = \"NAME\"", "include_model!", "[package.metadata.mlf]"] {
        assert!(msg.contains(how), "{how}: {msg}");
    }
}

#[test]
fn aot_without_entry_point() {
    let mut m = digits_members();
    let meta = String::from_utf8(get(&m, "metadata.json")).unwrap().replace("\"graph\"", "\"aot\"");
    set(&mut m, "metadata.json", meta);
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Missing(ref s) if s.contains("AOT entry point")), "{e}");
}

#[test]
fn directory_with_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in digits_members() {
        let p = dir.path().join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
    mlf_build::open(dir.path()).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("codegen/evil")).unwrap();
        let e = mlf_build::open(dir.path()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::NotARegularFile { what: "symbolic link", .. }), "{e}");
    }
}

/// The digits MLF with `extra` appended to default_lib1.c.
fn with_c(extra: &str) -> Vec<(String, Vec<u8>)> {
    let mut m = digits_members();
    let name = "codegen/host/src/default_lib1.c";
    let c = [get(&m, name), extra.as_bytes().to_vec()].concat();
    set(&mut m, name, c);
    m
}

#[test]
fn constant_array_sizes_that_overflow_are_refused() {
    // One array of 2^62 floats: 2^64 bytes.
    let m = with_c("\nstatic const float tvmgen_default_fused_constant_0[0x4000000000000000];\n");
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Invalid(ref s) if s.contains("tvmgen_default_fused_constant_0")), "{e}");
    assert_located(&e, "codegen/host/src/default_lib1.c");
    // Two arrays of 2^63 bytes each: each fits, their total does not.
    let m = with_c(
        "\nstatic const uint8_t tvmgen_default_fused_constant_0[0x8000000000000000];\n\
         static const uint8_t tvmgen_default_fused_constant_1[0x8000000000000000];\n",
    );
    let e = read_members(&m);
    assert!(matches!(e.kind, ErrorKind::Invalid(ref s) if s.contains("tvmgen_default_fused_constant_1")), "{e}");
    assert_located(&e, "codegen/host/src/default_lib1.c");
}

#[test]
fn c_that_ends_inside_a_block_is_refused_naming_file_and_line() {
    // Found by fuzzing the csource target: the scanner panicked (exit 101 from inspect and run).
    let lines = get(&digits_members(), "codegen/host/src/default_lib1.c").iter().filter(|b| **b == b'\n').count();
    for (extra, line) in [("int f(void) {", lines + 1), ("\nint f(void) {\n  if (1) {\n", lines + 2)] {
        let e = read_members(&with_c(extra));
        assert_located(&e, "codegen/host/src/default_lib1.c");
        let s = e.to_string();
        assert!(s.contains(&format!("line {line}")) && s.contains("truncated"), "{extra:?}: {s}");
    }
    // The whole file cut inside its first function.
    let mut m = digits_members();
    let name = "codegen/host/src/default_lib1.c";
    let text = String::from_utf8(get(&m, name)).unwrap();
    let cut = text.find('{').unwrap() + 1;
    set(&mut m, name, text.as_bytes()[..cut].to_vec());
    let e = read_members(&m);
    assert_located(&e, name);
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn every_reader_of_c_takes_truncated_text_without_panicking() {
    use mlf_build::__private::read::{csource, header::InterfaceHeader};
    let aot =
        mlf_fixtures::tar_members(&mlf_fixtures::workspace_root().join("mlf-build/tests/models/digits-aot-usmp.tar"));
    for (name, bytes) in aot.iter().filter(|(n, _)| n.ends_with(".c") || n.ends_with(".h")) {
        let text = String::from_utf8_lossy(bytes);
        let step = (text.len() / 400).max(1);
        for cut in (0..text.len()).step_by(step).filter(|c| text.is_char_boundary(*c)) {
            let t = &text[..cut];
            let f = mlf_build::__private::model::CFile::scan(t);
            let _ = csource::kernel_stores(t);
            let _ = csource::pool_reach(t, &["global_workspace_1_var", "global_const_workspace_0_var"]);
            let _ = f.exported_symbols().count();
            let _ = InterfaceHeader::parse(t, "default");
            let _ = name;
        }
    }
}

#[test]
fn over_long_member_names_are_refused_naming_the_member() {
    // Issue 25, class 6: the error named the OUT_DIR path the write failed in.
    let mut m = digits_members();
    let long = format!("codegen/host/src/{}.c", "k".repeat(300));
    let c = get(&m, "codegen/host/src/default_lib1.c");
    remove(&mut m, "codegen/host/src/default_lib1.c");
    set(&mut m, &long, c);
    let e = read_members(&m).to_string();
    assert!(e.contains("codegen/host/src/kkkk") && e.contains("at most 200 bytes") && !e.contains("OUT_DIR"), "{e}");
}
