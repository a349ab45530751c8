//! TVM module blobs: every fixture under ../shared/fixtures/blob is inspected (layouts, modules,
//! type keys, import trees, ABI, factory inputs/outputs/params); real blobs are written back
//! byte for byte; synthetic blobs round-trip in all three layouts; malformed blobs are refused
//! with specific errors; a synthetic MLF whose codegen carries device modules gets a blocker.

use std::path::{Path, PathBuf};

use mlf_build::__private::bytes::Bytes;
use mlf_build::__private::read::archive::Archive;
use mlf_build::__private::read::blob::source::{scan, scan_bytes, scan_c, scan_object, scan_raw};
use mlf_build::__private::read::blob::{ImportTree, Layout, Payload, parse};
use mlf_build::__private::read::detect::gunzip;
use mlf_build::__private::read::params::{ParamTensor, parse_params};
use mlf_build::__private::testing::blob::{
    CStyle, ModuleSpec, devc_c, device_payload, encode_payload, graph_executor_factory, write_blob,
};
use mlf_build::DType;
use mlf_build::{Error, ErrorKind};
use mlf_fixtures::{digits_members, digits_tar, fixtures_or_skip, write_members};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers

fn digits_archive() -> Archive {
    Archive::open(digits_tar()).expect("examples/digits/model/digits.tar")
}

/// The digits MLP's graph JSON and parameters, from the MLF the repository carries.
fn digits_graph_and_params() -> (Vec<u8>, Vec<ParamTensor>) {
    let a = digits_archive();
    let graph = a.get("executor-config/graph/default.graph").expect("graph").to_vec();
    let params = parse_params(a.get("parameters/default.params").expect("params")).expect("params parse");
    (graph, params)
}

fn digits_factory() -> Vec<u8> {
    let (g, p) = digits_graph_and_params();
    graph_executor_factory(&g, &p, "default")
}

fn lib() -> ModuleSpec<'static> {
    ModuleSpec { type_key: "_lib", payload: &[] }
}

fn tree(rows: &[&[u64]]) -> ImportTree {
    ImportTree::from_imports(&rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>())
}

fn u64le(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn string(s: &[u8]) -> Vec<u8> {
    [u64le(s.len() as u64), s.to_vec()].concat()
}

/// A blob from a body (prefixes `nbytes`).
fn with_nbytes(body: &[u8]) -> Vec<u8> {
    [u64le(body.len() as u64), body.to_vec()].concat()
}

fn parse_err(data: Vec<u8>, layout: Layout) -> Error {
    match parse(&Bytes::new(data), layout) {
        Ok(b) => panic!("expected an error, read {} modules", b.modules.len()),
        Err(e) => e,
    }
}

fn field(e: &Error) -> &str {
    e.field.as_deref().unwrap_or("")
}

fn ndarray_f32(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::new();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    mlf_build::__private::testing::params::write_ndarray(&mut out, DType::F32, &[values.len() as u64], &data);
    out
}

/// A factory payload written by hand (for malformed variants).
fn factory_payload(n: u64, names: &[&str], arrays: &[Vec<u8>], module_name: Option<&str>) -> Vec<u8> {
    let mut p = string(b"{}");
    p.extend(u64le(n));
    p.extend(u64le(names.len() as u64));
    for name in names {
        p.extend(string(name.as_bytes()));
    }
    for a in arrays {
        p.extend_from_slice(a);
    }
    if let Some(m) = module_name {
        p.extend(string(m.as_bytes()));
    }
    p
}

/// A legacy body: count, entries (key + raw payload), optional import tree.
fn legacy_body(entries: &[(&[u8], &[u8])], tree: Option<(&[u64], &[u64])>) -> Vec<u8> {
    let mut b = u64le((entries.len() + usize::from(tree.is_some())) as u64);
    for (k, p) in entries {
        b.extend(string(k));
        b.extend_from_slice(p);
    }
    if let Some((rp, ci)) = tree {
        b.extend(string(b"_import_tree"));
        b.extend(u64le(rp.len() as u64));
        rp.iter().for_each(|v| b.extend(u64le(*v)));
        b.extend(u64le(ci.len() as u64));
        ci.iter().for_each(|v| b.extend(u64le(*v)));
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Fixtures

fn import_tree_of(keys: &[&str]) -> Value {
    // Every fixture with a blob has two modules: the root imports the host library.
    json!({"index": 0, "type_key": keys[0], "imports": [{"index": 1, "type_key": keys[1], "imports": []}]})
}

struct Expect {
    file: &'static str,
    layout: Option<&'static str>,
    keys: &'static [&'static str],
    abi: &'static str,
    factory: bool,
}

const EXPECT: &[Expect] = &[
    Expect {
        file: "legacy-tvm0.13/deploy_llvm.so",
        layout: Some("legacy"),
        keys: &["GraphExecutorFactory", "_lib"],
        abi: "legacy-tvmvalue",
        factory: true,
    },
    Expect {
        file: "legacy-tvm0.13/deploy_c.so",
        layout: Some("legacy"),
        keys: &["GraphExecutorFactory", "_lib"],
        abi: "legacy-tvmvalue",
        factory: true,
    },
    Expect {
        file: "legacy-tvm0.13/deploy_c.tar",
        layout: Some("legacy"),
        keys: &["GraphExecutorFactory", "_lib"],
        abi: "legacy-tvmvalue",
        factory: true,
    },
    Expect {
        file: "tvm-ffi/relax_mlp_llvm.so",
        layout: Some("ffi"),
        keys: &["relax.VMExecutable", "_lib"],
        abi: "tvm-ffi",
        factory: false,
    },
    Expect {
        file: "tvm-ffi/relax_mlp_c.so",
        layout: Some("ffi"),
        keys: &["relax.VMExecutable", "_lib"],
        abi: "tvm-ffi",
        factory: false,
    },
    Expect {
        file: "tvm-ffi/relax_mlp_devc.c",
        layout: Some("ffi"),
        keys: &["relax.VMExecutable", "_lib"],
        abi: "tvm-ffi",
        factory: false,
    },
    Expect {
        file: "tvm-ffi/relax_mlp_library_bin.bin",
        layout: Some("ffi"),
        keys: &["relax.VMExecutable", "_lib"],
        abi: "tvm-ffi",
        factory: false,
    },
    Expect { file: "tvm-ffi/add_one_c.so", layout: None, keys: &[], abi: "tvm-ffi", factory: false },
    Expect { file: "tvm-ffi/add_one_llvm.so", layout: None, keys: &[], abi: "tvm-ffi", factory: false },
    Expect { file: "tvm-ffi/add_one_c_target.c", layout: None, keys: &[], abi: "tvm-ffi", factory: false },
    Expect { file: "tvm-ffi/scale2_c_syslib.c", layout: None, keys: &[], abi: "tvm-ffi", factory: false },
    Expect { file: "tvm-ffi/scale2_llvm_syslib.o", layout: None, keys: &[], abi: "tvm-ffi", factory: false },
];

/// Every file in a fixture folder, except the provenance documents.
fn fixture_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["legacy-tvm0.13", "tvm-ffi"] {
        let Ok(rd) = std::fs::read_dir(root.join("blob").join(dir)) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.ends_with(".md") || name.ends_with(".json")) {
                out.push(format!("{dir}/{name}"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_blob_fixture_is_inspected() {
    let Some(root) = fixtures_or_skip("every_blob_fixture_is_inspected") else { return };
    let opts = mlf_build::ReadOptions::default();
    let files = fixture_files(&root);
    assert!(files.len() >= 13, "blob fixtures: {files:?}");
    for file in &files {
        let path = root.join("blob").join(file);
        let (json, table) =
            mlf_build::__private::inspect::inspect_path(&path, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        if file.ends_with(".params") {
            assert_eq!(json["format"], "tvm-params", "{file}");
            assert_eq!(json["count"], 3, "{file}");
            let names: Vec<&str> =
                json["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            assert_eq!(names, ["w", "b", "s"]);
            continue;
        }
        let ex = EXPECT.iter().find(|e| e.file == file).unwrap_or_else(|| panic!("no expectation for fixture {file}"));
        assert_eq!(json["format"], "tvm-module", "{file}");
        assert_eq!(json["layout"].as_str(), ex.layout, "{file}");
        let keys: Vec<&str> =
            json["modules"].as_array().unwrap().iter().map(|m| m["type_key"].as_str().unwrap()).collect();
        assert_eq!(keys, ex.keys, "{file}");
        if ex.keys.is_empty() {
            assert_eq!(json["import_tree"], Value::Null, "{file}");
        } else {
            assert_eq!(json["import_tree"], import_tree_of(ex.keys), "{file}");
            for (i, m) in json["modules"].as_array().unwrap().iter().enumerate() {
                assert_eq!(m["index"], i, "{file}");
            }
        }
        assert_eq!(json["abi"]["generation"], ex.abi, "{file}");
        assert_eq!(json["buildable"], false, "{file}");
        let blockers: Vec<&str> = json["blockers"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
        if json.get("relax").is_some() {
            // A Relax program is the Relax executor's: its blocker is the lowering's verdict or,
            // for a part of an export (a shared object, `devc.c`, the bare executable), that the
            // export's tar builds.
            assert!(table.contains("relax executable  version 0.14"), "{file}");
            assert!(
                blockers[0].contains("without its kernels: build the tar that export_library wrote")
                    || blockers[0].contains("statically"),
                "{file}: {blockers:?}"
            );
            assert!(!blockers.iter().any(|b| b.contains("TVM ≥ 0.21")), "{file}: {blockers:?}");
        } else if ex.abi == "tvm-ffi" {
            assert!(blockers.iter().any(|b| b.contains("TVM ≥ 0.21")), "{file}: {blockers:?}");
            assert!(table.contains("cannot build: built for the tvm-ffi ABI (TVM ≥ 0.21)"), "{file}");
        } else {
            assert!(!blockers.iter().any(|b| b.contains("tvm-ffi")), "{file}: {blockers:?}");
        }
        if ex.factory {
            assert_eq!(json["executor"], "graph", "{file}");
            assert_eq!(json["module_name"], "default", "{file}");
            assert_eq!(json["inputs"], json!([{"name": "pixels", "dtype": "float32", "shape": [1, 64]}]), "{file}");
            assert_eq!(json["outputs"], json!([{"name": "output", "dtype": "float32", "shape": [1, 10]}]), "{file}");
            assert_eq!(json["params"], json!({"count": 4, "bytes": 9640}), "{file}");
            assert_eq!(json["modules"][0]["bytes"], 12625, "{file}");
            assert_eq!(json["blob"]["bytes"], 12749, "{file}");
        }
        if ex.layout == Some("ffi") {
            assert_eq!(json["blob"]["bytes"], 2007, "{file}");
            assert_eq!(json["modules"][0]["bytes"], 1905, "{file}");
            assert_eq!(json["modules"][0]["offset"], 0x38, "{file}");
            assert_eq!(json["modules"][1]["offset"], 0x7cb, "{file}");
            assert_eq!(json["modules"][0]["detail"]["version"], "0.14", "{file}");
        }
        assert!(json["warnings"].as_array().unwrap().is_empty(), "{file}: {}", json["warnings"]);
        // Building is refused, naming TVM ≥ 0.21 for tvm-ffi code.
        let e = mlf_build::open(&path).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Unsupported(_)), "{file}: {e}");
        if json.get("relax").is_some() {
            assert!(e.to_string().contains("Relax"), "{file}: {e}");
        } else if ex.abi == "tvm-ffi" {
            assert!(e.to_string().contains("TVM ≥ 0.21"), "{file}: {e}");
        }
    }
}

/// The devc.c inside the gzip-compressed `deploy_c.tar`.
fn legacy_devc(root: &Path) -> String {
    let gz = std::fs::read(root.join("blob/legacy-tvm0.13/deploy_c.tar")).unwrap();
    let tar = gunzip(&gz, 1 << 30).unwrap();
    let a = Archive::from_tar_bytes("deploy_c.tar", Bytes::new(tar)).unwrap();
    a.get("devc.c").unwrap().as_str().unwrap().to_string()
}

#[test]
fn real_blobs_are_written_back_byte_for_byte() {
    let Some(root) = fixtures_or_skip("real_blobs_are_written_back_byte_for_byte") else { return };
    let groups: [(&[&str], Layout); 2] = [
        (
            &["legacy-tvm0.13/deploy_llvm.so", "legacy-tvm0.13/deploy_c.so", "legacy-tvm0.13/deploy_c.tar"],
            Layout::Legacy,
        ),
        (
            &[
                "tvm-ffi/relax_mlp_llvm.so",
                "tvm-ffi/relax_mlp_c.so",
                "tvm-ffi/relax_mlp_devc.c",
                "tvm-ffi/relax_mlp_library_bin.bin",
            ],
            Layout::Ffi,
        ),
    ];
    for (files, layout) in groups {
        let mut first: Option<Vec<u8>> = None;
        for file in files {
            let s = scan(&root.join("blob").join(file)).unwrap();
            assert_eq!(s.found.len(), 1, "{file}");
            let f = &s.found[0];
            assert_eq!(f.layout, layout, "{file}");
            let blob = parse(&f.bytes, f.layout).unwrap();
            // The blob written again from its modules and tree.
            assert_eq!(blob.to_bytes(), f.bytes.as_slice(), "{file}: blob bytes");
            // Every payload encoded again from its decoded form.
            for m in &blob.modules {
                assert_ne!(m.decoded, Payload::Opaque, "{file}: module {}", m.index);
                let again = encode_payload(&m.decoded, layout).unwrap();
                assert_eq!(again, m.payload.as_slice(), "{file}: module {} ({}) payload", m.index, m.type_key);
            }
            // The same model gives the same blob in every container.
            match &first {
                None => first = Some(f.bytes.to_vec()),
                Some(b) => assert_eq!(b, &f.bytes.to_vec(), "{file}: differs from {}", files[0]),
            }
        }
    }
    // The devc.c text itself, in both of TVM's print styles.
    let legacy_c = legacy_devc(&root);
    let blob = scan_c(&legacy_c).unwrap().remove(0).bytes;
    assert_eq!(devc_c("__tvm_dev_mblob", &blob, CStyle::Unpadded, false), legacy_c);
    let ffi_c = std::fs::read_to_string(root.join("blob/tvm-ffi/relax_mlp_devc.c")).unwrap();
    let blob = scan_c(&ffi_c).unwrap().remove(0).bytes;
    assert_eq!(devc_c("__tvm_ffi__library_bin", &blob, CStyle::Padded, false), ffi_c);
}

#[test]
fn legacy_factory_fixture_matches_the_digits_mlf() {
    let Some(root) = fixtures_or_skip("legacy_factory_fixture_matches_the_digits_mlf") else { return };
    let s = scan(&root.join("blob/legacy-tvm0.13/deploy_llvm.so")).unwrap();
    let blob = parse(&s.found[0].bytes, Layout::Legacy).unwrap();
    let Payload::Factory(f) = &blob.modules[0].decoded else { panic!("not a factory") };
    let (_, params) = digits_graph_and_params();
    let mut got: Vec<(String, DType, Vec<u64>)> =
        f.params.iter().map(|p| (p.name.clone(), p.dtype, p.shape.clone())).collect();
    let mut want: Vec<(String, DType, Vec<u64>)> =
        params.iter().map(|p| (p.name.clone(), p.dtype, p.shape.clone())).collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------------
// Synthetic round trips

fn synthetic_modules() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let factory = digits_factory();
    let cuda = device_payload(
        "ptx",
        &[("fused_dense_kernel", &[DType::F32, DType::F32], &["blockIdx.x", "threadIdx.x"])],
        b"// PTX",
        true,
    );
    let opencl =
        device_payload("cl", &[("fused_add_kernel", &[DType::F32], &["blockIdx.x"])], b"__kernel void k() {}", true);
    (factory, cuda, opencl)
}

#[test]
fn write_then_read_gives_the_same_modules_in_every_layout() {
    let (factory, cuda, opencl) = synthetic_modules();
    let specs = [
        ModuleSpec { type_key: "GraphExecutorFactory", payload: &factory },
        lib(),
        ModuleSpec { type_key: "cuda", payload: &cuda },
        ModuleSpec { type_key: "opencl", payload: &opencl },
    ];
    let t = tree(&[&[1], &[2, 3], &[], &[]]);
    for layout in [Layout::Legacy, Layout::Ffi021, Layout::Ffi] {
        let bytes = write_blob(layout, &specs, Some(&t));
        let blob = parse(&Bytes::new(bytes.clone()), layout).unwrap_or_else(|e| panic!("{layout:?}: {e}"));
        assert_eq!(blob.layout, layout);
        let keys: Vec<&str> = blob.modules.iter().map(|m| m.type_key.as_str()).collect();
        assert_eq!(keys, ["GraphExecutorFactory", "_lib", "cuda", "opencl"], "{layout:?}");
        for (m, s) in blob.modules.iter().zip(&specs) {
            assert_eq!(m.payload.as_slice(), s.payload, "{layout:?} {}", m.type_key);
        }
        assert_eq!(blob.import_tree.as_ref(), Some(&t));
        assert_eq!(
            blob.import_tree.as_ref().unwrap().to_json(&blob.modules),
            json!({"index":0,"type_key":"GraphExecutorFactory","imports":[
                {"index":1,"type_key":"_lib","imports":[
                    {"index":2,"type_key":"cuda","imports":[]},
                    {"index":3,"type_key":"opencl","imports":[]}]}]})
        );
        assert_eq!(blob.to_bytes(), bytes, "{layout:?}");
        let Payload::Device(d) = &blob.modules[2].decoded else { panic!("cuda not decoded") };
        assert_eq!(d.fmt, "ptx");
        assert_eq!(d.functions[0].name, "fused_dense_kernel");
        assert_eq!(d.functions[0].arg_types, vec![DType::F32, DType::F32]);
    }
}

#[test]
fn synthetic_exports_are_inspected_with_device_blockers() {
    let (factory, cuda, _) = synthetic_modules();
    let dir = tempfile::tempdir().unwrap();
    // The 0.21 hybrid: legacy layout under __tvm_ffi_library_bin, as a devc.c.
    let blob = write_blob(
        Layout::Ffi021,
        &[
            ModuleSpec { type_key: "GraphExecutorFactory", payload: &factory },
            lib(),
            ModuleSpec { type_key: "cuda", payload: &cuda },
        ],
        Some(&tree(&[&[1], &[2], &[]])),
    );
    let path = dir.path().join("devc.c");
    std::fs::write(&path, devc_c("__tvm_ffi_library_bin", &blob, CStyle::Padded, false)).unwrap();
    let (json, table) = mlf_build::__private::inspect::inspect_path(&path, &Default::default()).unwrap();
    assert_eq!(json["layout"], "ffi-0.21");
    assert_eq!(json["abi"]["generation"], "tvm-ffi");
    assert_eq!(json["inputs"][0]["name"], "pixels");
    assert_eq!(json["params"]["count"], 4);
    let cuda_bytes = cuda.len();
    assert!(
        json["blockers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b.as_str().unwrap().contains(&format!("cuda ({cuda_bytes} bytes)"))),
        "{}",
        json["blockers"]
    );
    assert!(table.contains("  2 cuda"), "{table}");
    // A raw legacy blob file.
    let blob = write_blob(Layout::Legacy, &[ModuleSpec { type_key: "cuda", payload: &cuda }], None);
    let path = dir.path().join("x.bin");
    std::fs::write(&path, &blob).unwrap();
    let (json, _) = mlf_build::__private::inspect::inspect_path(&path, &Default::default()).unwrap();
    assert_eq!(json["layout"], "legacy");
    assert_eq!(json["import_tree"]["implicit"], true);
    assert_eq!(json["modules"][0]["detail"]["functions"][0], "fused_dense_kernel");
}

/// An ELF relocatable object with blobs at odd offsets in `.rodata` and `.lrodata`.
fn elf_object(blobs: &[(&str, &[u8], &str, Option<u64>)]) -> Vec<u8> {
    use object::write::{Object, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolKind, SymbolScope};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    for (name, data, section, size) in blobs {
        let kind = if *section == ".bss" { SectionKind::UninitializedData } else { SectionKind::ReadOnlyData };
        let sec = obj.add_section(Vec::new(), section.as_bytes().to_vec(), kind);
        let off = if kind == SectionKind::UninitializedData {
            obj.append_section_bss(sec, data.len() as u64, 1)
        } else {
            obj.append_section_data(sec, &[0xAA], 1);
            obj.append_section_data(sec, data, 1)
        };
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value: off,
            size: size.unwrap_or(data.len() as u64),
            kind: SymbolKind::Data,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Section(sec),
            flags: SymbolFlags::None,
        });
    }
    obj.write().unwrap()
}

#[test]
fn blobs_are_found_in_relocatable_objects() {
    let (_, cuda, opencl) = synthetic_modules();
    let legacy = write_blob(
        Layout::Legacy,
        &[lib(), ModuleSpec { type_key: "cuda", payload: &cuda }],
        Some(&tree(&[&[1], &[]])),
    );
    let ffi = write_blob(
        Layout::Ffi,
        &[lib(), ModuleSpec { type_key: "opencl", payload: &opencl }],
        Some(&tree(&[&[1], &[]])),
    );
    let o = elf_object(&[
        ("__tvm_dev_mblob", &legacy, ".rodata", None),
        ("mylib___tvm_ffi__library_bin", &ffi, ".lrodata", None),
    ]);
    let scan = scan_object(&Bytes::new(o.clone())).unwrap();
    assert_eq!(scan.kind, "ELF relocatable object");
    assert_eq!(scan.blobs.len(), 2);
    assert_eq!(scan.blobs[0].bytes.as_slice(), &legacy[..]);
    assert_eq!(scan.blobs[0].section, ".rodata");
    assert_eq!(scan.blobs[0].file_offset % 2, 1, "the blob sits at an odd offset");
    assert_eq!(scan.blobs[1].layout, Layout::Ffi);
    assert_eq!(scan.blobs[1].section, ".lrodata");
    assert_eq!(scan.blobs[1].bytes.as_slice(), &ffi[..]);
    let s = scan_bytes(Path::new("devc.o"), Bytes::new(o)).unwrap();
    let keys: Vec<&str> = s.found.iter().map(|f| f.symbol.as_deref().unwrap()).collect();
    assert_eq!(keys, ["__tvm_dev_mblob", "mylib___tvm_ffi__library_bin"]);
    assert_eq!(parse(&s.found[1].bytes, Layout::Ffi).unwrap().modules[1].type_key, "opencl");
}

// ---------------------------------------------------------------------------------------------
// Malformed blobs

#[test]
fn malformed_blobs_are_rejected_with_specific_errors() {
    let lg = Layout::Legacy;
    let ok_array = ndarray_f32(&[1.0, 2.0]);
    type KindCheck = fn(&ErrorKind) -> bool;
    let mut cases: Vec<(&str, Error, KindCheck, &str)> = Vec::new();
    let truncated: KindCheck = |k| matches!(k, ErrorKind::Truncated { .. });
    let invalid: KindCheck = |k| matches!(k, ErrorKind::Invalid(_));
    let mismatch: KindCheck = |k| matches!(k, ErrorKind::Mismatch(_));
    let unsupported: KindCheck = |k| matches!(k, ErrorKind::Unsupported(_));
    let bad_magic: KindCheck = |k| matches!(k, ErrorKind::BadMagic { .. });

    // 1. Empty input: no nbytes.
    cases.push(("empty", parse_err(vec![], lg), truncated, "nbytes"));
    // 2. nbytes larger than the data.
    cases.push(("nbytes past the end", parse_err([u64le(100), vec![0; 10]].concat(), lg), truncated, "nbytes"));
    // 3. A module count that cannot fit.
    cases.push(("huge count", parse_err(with_nbytes(&u64le(u64::MAX)), lg), truncated, "count"));
    // 4. An unknown type key in the legacy layout: named with its offset.
    let e = parse_err(with_nbytes(&legacy_body(&[(b"my_npu", b"xx")], None)), lg);
    assert!(e.to_string().contains("\"my_npu\" at offset 16"), "{e}");
    cases.push(("unknown key", e, unsupported, "modules[0].type_key"));
    // 5. A key longer than the blob.
    let mut body = u64le(1);
    body.extend(u64le(1000));
    body.extend(b"ab");
    cases.push(("key past the end", parse_err(with_nbytes(&body), lg), truncated, "modules[0].type_key"));
    // 6. A key that is not UTF-8.
    cases.push((
        "key not UTF-8",
        parse_err(with_nbytes(&legacy_body(&[(&[0xff, 0xfe], b"")], None)), lg),
        invalid,
        "modules[0].type_key",
    ));
    // 7. An empty key.
    cases.push((
        "empty key",
        parse_err(with_nbytes(&legacy_body(&[(b"", b"")], None)), lg),
        invalid,
        "modules[0].type_key",
    ));
    // 8. Factory: the parameter count disagrees with the names.
    let p = [factory_payload(2, &["p0"], &[], None), vec![0; 200]].concat();
    cases.push((
        "factory count vs names",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        mismatch,
        "modules[0].payload.params.names",
    ));
    // 9. Factory: an NDArray with a bad magic.
    let mut bad = ok_array.clone();
    bad[0] ^= 1;
    let p = factory_payload(1, &["p0"], &[bad], Some("default"));
    cases.push((
        "ndarray magic",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        bad_magic,
        "modules[0].payload.params.arrays[0] (p0).magic",
    ));
    // 10. Factory: data_bytes disagrees with dtype × shape.
    let mut bad = ok_array.clone();
    let nb = bad.len() - 8 - 8;
    bad[nb..nb + 8].copy_from_slice(&5i64.to_le_bytes());
    let p = factory_payload(1, &["p0"], &[bad], Some("default"));
    cases.push((
        "ndarray data_bytes",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        mismatch,
        "modules[0].payload.params.arrays[0] (p0).data_bytes",
    ));
    // 11. Factory: a tensor on a device other than the CPU.
    let mut bad = ok_array.clone();
    bad[16..20].copy_from_slice(&2i32.to_le_bytes());
    let p = factory_payload(1, &["p0"], &[bad], Some("default"));
    cases.push((
        "ndarray device",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        invalid,
        "modules[0].payload.params.arrays[0] (p0).device_type",
    ));
    // 12. Factory: a parameter name twice.
    let p = factory_payload(2, &["p0", "p0"], &[ok_array.clone(), ok_array.clone()], Some("default"));
    cases.push((
        "duplicate parameter",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        invalid,
        "modules[0].payload.params.names",
    ));
    // 13. Factory: the module name is cut off.
    let p = factory_payload(1, &["p0"], std::slice::from_ref(&ok_array), None);
    cases.push((
        "factory module_name missing",
        parse_err(with_nbytes(&legacy_body(&[(b"GraphExecutorFactory", &p)], None)), lg),
        truncated,
        "modules[0].payload.module_name",
    ));
    // 14. Bytes left over after the last entry.
    let body = [legacy_body(&[(b"_lib", b"")], Some((&[0, 0], &[]))), vec![1, 2, 3]].concat();
    cases.push(("trailing bytes", parse_err(with_nbytes(&body), lg), mismatch, "nbytes"));
    // 15. An entry after _import_tree.
    let mut body = legacy_body(&[(b"_lib", b"")], Some((&[0, 0], &[])));
    body[..8].copy_from_slice(&3u64.to_le_bytes());
    body.extend(string(b"_lib"));
    cases.push(("entry after _import_tree", parse_err(with_nbytes(&body), lg), invalid, "import_tree"));
    // 16. row_ptr of the wrong length.
    let body = legacy_body(&[(b"_lib", b"")], Some((&[0, 0, 0], &[])));
    cases.push(("row_ptr length", parse_err(with_nbytes(&body), lg), mismatch, "import_tree.row_ptr"));
    // 17. A child index out of range.
    let body = legacy_body(&[(b"_lib", b"")], Some((&[0, 1], &[7])));
    cases.push(("child out of range", parse_err(with_nbytes(&body), lg), invalid, "import_tree.child_indices[0]"));
    // 18. A back edge (cycle).
    let body = legacy_body(&[(b"_lib", b""), (b"metadata_module", b"")], Some((&[0, 1, 2], &[1, 0])));
    cases.push(("import cycle", parse_err(with_nbytes(&body), lg), invalid, "import_tree.child_indices[1]"));
    // 19. A device module whose function map claims more entries than fit.
    let p = [string(b"ptx"), u64le(1 << 40)].concat();
    cases.push((
        "cuda fmap count",
        parse_err(with_nbytes(&legacy_body(&[(b"cuda", &p)], None)), lg),
        truncated,
        "modules[0].payload.fmap",
    ));
    // 20. A constant loader whose array count disagrees with its variables.
    let p = [u64le(2), string(b"a"), string(b"b"), u64le(1), ok_array.clone()].concat();
    cases.push((
        "const_loader count",
        parse_err(with_nbytes(&legacy_body(&[(b"const_loader", &p)], None)), lg),
        mismatch,
        "modules[0].payload.arrays.count",
    ));
    // 21. A Relax executable string longer than the blob.
    let p = u64le(1 << 20);
    cases.push((
        "relax executable length",
        parse_err(with_nbytes(&legacy_body(&[(b"relax.Executable", &p)], None)), lg),
        truncated,
        "modules[0].payload.executable",
    ));
    // 22. tvm-ffi: an empty indptr (no modules).
    let body = [u64le(0), u64le(0)].concat();
    cases.push(("ffi empty indptr", parse_err(with_nbytes(&body), Layout::Ffi), invalid, "import_tree.row_ptr"));
    // 23. tvm-ffi: more modules than the bytes can hold.
    let mut body = u64le(1001);
    (0..1001).for_each(|_| body.extend(u64le(0)));
    body.extend(u64le(0));
    cases.push(("ffi module count", parse_err(with_nbytes(&body), Layout::Ffi), mismatch, "import_tree.row_ptr"));
    // 24. tvm-ffi: a payload longer than the blob.
    let body = [u64le(2), u64le(0), u64le(0), u64le(0), string(b"cuda"), u64le(500)].concat();
    cases.push(("ffi payload length", parse_err(with_nbytes(&body), Layout::Ffi), truncated, "modules[0].payload"));
    // 25. tvm-ffi: bytes after the last module.
    let body = [u64le(2), u64le(0), u64le(0), u64le(0), string(b"_lib"), vec![9]].concat();
    cases.push(("ffi trailing bytes", parse_err(with_nbytes(&body), Layout::Ffi), mismatch, "nbytes"));
    // 26. tvm-ffi: a tree whose child precedes its parent.
    let body = [u64le(3), u64le(0), u64le(0), u64le(1), u64le(1), u64le(0), string(b"_lib"), string(b"_lib")].concat();
    cases.push(("ffi back edge", parse_err(with_nbytes(&body), Layout::Ffi), invalid, "import_tree.child_indices[0]"));

    let good = write_blob(Layout::Legacy, &[lib()], Some(&tree(&[&[]])));
    // 27. devc.c: a value that is not a byte.
    let c = devc_c("__tvm_dev_mblob", &good, CStyle::Padded, false).replacen("0x00,", "0x100,", 1);
    let e = scan_c(&c).unwrap_err();
    cases.push(("C value > 255", e, invalid, "__tvm_dev_mblob[1]"));
    // 28. devc.c: the array is longer than 8 + nbytes.
    let longer = [good.clone(), vec![0]].concat();
    let c = devc_c("__tvm_dev_mblob", &longer, CStyle::Unpadded, false);
    let e = scan_c(&c).unwrap_err();
    assert_eq!(e.member.as_deref(), Some("__tvm_dev_mblob"));
    cases.push(("C array length", e, mismatch, "nbytes"));
    // 29. devc.c: the declared size disagrees with the initialiser.
    let c = devc_c("__tvm_dev_mblob", &good, CStyle::Padded, false).replace(&format!("[{}]", good.len()), "[99]");
    cases.push(("C declared size", scan_c(&c).unwrap_err(), mismatch, "__tvm_dev_mblob"));
    // 30. ELF: the symbol's size disagrees with the blob's nbytes.
    let o = elf_object(&[("__tvm_dev_mblob", &good, ".rodata", Some(good.len() as u64 + 4))]);
    let e = scan_object(&Bytes::new(o)).unwrap_err();
    assert_eq!(e.member.as_deref(), Some("__tvm_dev_mblob"));
    cases.push(("ELF symbol size", e, mismatch, "nbytes"));
    // 31. ELF: the symbol is in .bss (no bytes in the file).
    let o = elf_object(&[("__tvm_dev_mblob", &good, ".bss", None)]);
    let e = scan_object(&Bytes::new(o)).unwrap_err();
    assert_eq!(e.member.as_deref(), Some("__tvm_dev_mblob"));
    cases.push(("ELF symbol in .bss", e, invalid, ""));
    // 32. Raw file: bytes after the blob.
    let e = scan_raw(&Bytes::new([good.clone(), vec![0; 3]].concat())).unwrap_err();
    cases.push(("raw trailing bytes", e, mismatch, "nbytes"));

    // Every numbered case above is checked, each under its own name.
    let names: std::collections::HashSet<&str> = cases.iter().map(|c| c.0).collect();
    assert_eq!((cases.len(), names.len()), (32, 32), "one case per number above, each named once");
    for (name, e, kind_ok, want_field) in &cases {
        assert!(kind_ok(&e.kind), "{name}: unexpected kind: {e}");
        assert_eq!(field(e), *want_field, "{name}: {e}");
    }
    eprintln!("{} malformed blobs rejected", cases.len());
}

// ---------------------------------------------------------------------------------------------
// MLF with device modules in its code

#[test]
fn mlf_whose_codegen_carries_device_modules_is_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let mlf: PathBuf = dir.path().join("model");
    write_members(&mlf, &digits_members());
    // Without a blob: no blockers.
    let desc = mlf_build::open(&mlf).unwrap();
    assert!(desc.blockers.is_empty(), "{:?}", desc.blockers);

    let (_, cuda, opencl) = synthetic_modules();
    let blob = write_blob(
        Layout::Legacy,
        &[lib(), ModuleSpec { type_key: "cuda", payload: &cuda }, ModuleSpec { type_key: "opencl", payload: &opencl }],
        Some(&tree(&[&[1, 2], &[], &[]])),
    );
    std::fs::write(mlf.join("codegen/host/src/devc.c"), devc_c("__tvm_dev_mblob", &blob, CStyle::Padded, false))
        .unwrap();
    let desc = mlf_build::open(&mlf).unwrap();
    let want = format!(
        "codegen/host/src/devc.c carries device modules cuda ({} bytes), opencl ({} bytes) that cannot run on the CPU target",
        cuda.len(),
        opencl.len()
    );
    assert_eq!(desc.blockers, vec![want]);

    // A malformed blob there is a reader error naming the member.
    let mut bad = blob.clone();
    let n = bad.len();
    bad.truncate(n - 8);
    bad[..8].copy_from_slice(&((n - 16) as u64).to_le_bytes());
    std::fs::write(mlf.join("codegen/host/src/devc.c"), devc_c("__tvm_dev_mblob", &bad, CStyle::Padded, false))
        .unwrap();
    let e = mlf_build::open(&mlf).unwrap_err();
    assert!(e.member.as_deref().unwrap_or("").starts_with("codegen/host/src/devc.c"), "{e}");
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }), "{e}");
}

#[test]
fn mlf_whose_object_carries_a_damaged_blob_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mlf: PathBuf = dir.path().join("model");
    write_members(&mlf, &digits_members());
    let lib_dir = mlf.join("codegen/host/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let good = write_blob(Layout::Legacy, &[lib()], Some(&tree(&[&[]])));

    // An object the `object` crate cannot read is refused, naming it (objects are checked as
    // compiled code before anything links them), blob name or not.
    std::fs::write(lib_dir.join("devc.o"), b"not an object, but it names __tvm_dev_mblob").unwrap();
    let e = mlf_build::open(&mlf).unwrap_err();
    assert_eq!(e.member.as_deref(), Some("codegen/host/lib/devc.o"), "{e}");
    assert!(e.to_string().contains("not an object file"), "{e}");

    // A damaged blob symbol in an object is an error naming the object and the symbol, as in devc.c.
    for (blob, section, size) in [(&good, ".rodata", Some(good.len() as u64 + 4)), (&good, ".bss", None)] {
        std::fs::write(lib_dir.join("devc.o"), elf_object(&[("__tvm_dev_mblob", blob, section, size)])).unwrap();
        let Err(e) = mlf_build::open(&mlf) else { panic!("{section}: the damaged blob was dropped") };
        assert_eq!(e.member.as_deref(), Some("codegen/host/lib/devc.o (__tvm_dev_mblob)"), "{section}: {e}");
    }
}

/// `cargo mlf inspect` on the Relax exports of `fixtures/relax`: what the program holds, and for
/// the two that cannot be static, exactly why.
#[test]
fn relax_exports_are_inspected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
    let opts = mlf_build::ReadOptions::default();
    let inspect = |name: &str| {
        mlf_build::__private::inspect::inspect_path(&root.join(name).join("model.tar"), &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let (json, table) = inspect("int8cnn-fused-c");
    let r = &json["relax"];
    assert_eq!(r["static"], true);
    // A whole export builds: no blocker.
    assert_eq!(json["buildable"], true, "{json}");
    assert_eq!(json["blockers"], json!([]), "{json}");
    // Kernels in an LLVM object that take scratch memory (sizes read from their machine code):
    // buildable, with the plan of the same model's C export.
    let (llvm, _) = inspect("cnn-f32-fused-llvm-thumbv7em");
    assert_eq!(llvm["buildable"], true, "{llvm}");
    assert_eq!(llvm["blockers"], json!([]), "{llvm}");
    assert_eq!(llvm["relax"]["plan"], inspect("cnn-f32-fused-c").0["relax"]["plan"]);
    // Where each runs, by the build's own checks: the thumbv7em object on the Cortex-M4F only;
    // the Cortex-M0+ (soft-float) object on the cores that run Armv6-M code with floats in core
    // registers, not on the M4F's hard-float ABI (it linked there and computed infinities).
    let runs = |json: &Value| -> Vec<String> {
        let all = json["runs_on"].as_array().unwrap_or_else(|| panic!("no runs_on: {json}"));
        all.iter().filter(|r| r["runs"] == true).map(|r| r["target"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(runs(&llvm), ["thumbv7em-none-eabihf"]);
    let (v6m, v6m_table) = inspect("cnn-f32-fused-llvm-thumbv6m");
    assert_eq!(runs(&v6m), ["thumbv6m-none-eabi", "thumbv7m-none-eabi", "thumbv7em-none-eabi"]);
    assert!(
        v6m_table.contains("thumbv7em-none-eabihf              no: lib0.o passes floats in core registers"),
        "{v6m_table}"
    );
    assert!(runs(&json).len() >= 6, "a C export runs everywhere: {json}");
    assert_eq!(r["entry"], "main");
    assert_eq!(r["inputs"], json!([{"name": "image", "dtype": "int8", "shape": [1, 1, 8, 8], "bytes": 64}]));
    let outputs: Vec<&str> = r["outputs"].as_array().unwrap().iter().map(|o| o["dtype"].as_str().unwrap()).collect();
    assert_eq!(outputs, ["int8", "int8", "int64"]);
    assert_eq!(r["weights"][0], json!({"name": "c[6]", "dtype": "int8", "shape": [4, 1, 3, 3], "bytes": 36}));
    assert_eq!(r["storage"]["bytes"], 473);
    // mlf's liveness plan, not TVM's storage blocks: 320 bytes where TVM allocates 512 (aligned).
    assert_eq!(r["plan"], json!({"align": 16, "arena": 320, "liveness_bound": 320, "tvm_storage": 512}));
    assert!(r["kernels"].as_array().unwrap().iter().any(|k| k == "argmax"));
    assert!(table.contains("static       yes: entry `main`, 7 kernel calls"), "{table}");
    assert!(table.contains("  0   image                        int8      [1, 1, 8, 8] (64 bytes)"), "{table}");

    for (name, cause) in
        [("refuse-symbolic-shape-c", "symbolic shape"), ("refuse-compiled-mode-c", "exec_mode=\"compiled\"")]
    {
        let (json, table) = inspect(name);
        assert_eq!(json["relax"]["static"], false, "{name}");
        let blockers = json["blockers"].as_array().unwrap();
        assert!(blockers[0].as_str().unwrap().contains(cause), "{name}: {blockers:?}");
        assert!(table.contains("static       no: ") && table.contains(cause), "{name}: {table}");
    }
}
