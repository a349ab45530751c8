//! One document per metadata version (1 to 7) with the variations TVM wrote, and the shape
//! checks that tie a document to its version.

use mlf_build::__private::read::metadata::{ExecutorKind, Metadata};
use mlf_build::ErrorKind;

fn parse(s: &str) -> Metadata {
    Metadata::parse(s.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{s}"))
}

#[test]
fn v1_memory_is_a_list_and_runtimes_names_the_executor() {
    let m = parse(
        r#"{"version":1,"model_name":"m","export_datetime":"2021-03-10 10:00:00Z","runtimes":["graph"],
        "target":{"1":"c -keys=cpu -link-params=0"},"memory":[{"storage_id":0,"size_bytes":16,"input_binding":"a"}]}"#,
    );
    assert_eq!(m.version, 1);
    let md = m.module(None).unwrap();
    assert_eq!(md.executor, ExecutorKind::Graph);
    assert_eq!(md.memory.sids.len(), 1);
    assert_eq!(md.memory.sids[0].input_binding.as_deref(), Some("a"));
    assert_eq!(md.targets[0].device, Some(1));
    assert_eq!(md.targets[0].option("link-params"), Some("0"));
}

#[test]
fn v1_aot_has_empty_memory_list() {
    let m = parse(r#"{"version":1,"model_name":"m","runtimes":["aot"],"target":{"1":"c"},"memory":[]}"#);
    assert_eq!(m.modules[0].executor, ExecutorKind::Aot);
}

#[test]
fn v2_memory_object_with_functions_and_sids() {
    let m = parse(
        r#"{"version":2,"model_name":"default","runtimes":["graph"],"target":{"1":"c"},
        "memory":{"sids":[{"storage_id":0,"size_bytes":4}],"functions":{"main":[{"device":1,"workspace_size_bytes":100,
        "constants_size_bytes":8,"io_size_bytes":12}],"operator_functions":[{"function_name":"fused_add","workspace":[{"device":1,"workspace_size_bytes":32}]}]}}}"#,
    );
    let md = &m.modules[0];
    assert_eq!(md.memory.cpu_main().unwrap().workspace_size_bytes, 100);
    assert_eq!(md.memory.operator_workspace("fused_add"), Some(32));
}

#[test]
fn v3_and_v4_add_style() {
    let v3 = parse(
        r#"{"version":3,"model_name":"default","runtimes":["aot"],"target":{"1":"c"},"memory":{"functions":{"main":[]}}}"#,
    );
    assert_eq!(v3.version, 3);
    assert!(v3.modules[0].style.is_none());
    let v4 = parse(
        r#"{"version":4,"model_name":"default","runtimes":["graph"],"style":"full-model","target":{"1":"c"},"memory":{"functions":{}}}"#,
    );
    assert_eq!(v4.modules[0].style.as_deref(), Some("full-model"));
}

#[test]
fn v5_executors_replace_runtimes() {
    let m = parse(
        r#"{"version":5,"model_name":"default","executors":["aot"],"style":"full-model","target":{"1":"c -keys=cpu"},
        "memory":{"functions":{"main":[{"device":1,"workspace_size_bytes":1184,"constants_size_bytes":1284,"io_size_bytes":8}]}}}"#,
    );
    assert_eq!(m.modules[0].executor, ExecutorKind::Aot);
    let e = Metadata::parse(br#"{"version":5,"model_name":"d","runtimes":["aot"],"target":{"1":"c"},"memory":{}}"#)
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("runtimes"), "{e}");
}

#[test]
fn v6_target_is_a_list() {
    let m = parse(
        r#"{"version":6,"model_name":"default","executors":["graph"],"style":"full-model","target":["c -keys=cpu","llvm"],"memory":{}}"#,
    );
    assert_eq!(m.modules[0].targets.len(), 2);
    assert_eq!(m.modules[0].targets[1].kind, "llvm");
    let e = Metadata::parse(br#"{"version":6,"model_name":"d","executors":["graph"],"target":{"1":"c"},"memory":{}}"#)
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("target"), "{e}");
}

#[test]
fn v7_modules_and_choosing_one() {
    let doc = r#"{"version":7,"modules":{
        "a":{"model_name":"a","executors":["graph"],"style":"full-model","target":["c"],"memory":{"functions":{"main":[{"device":1,"workspace_size_bytes":1,
             "inputs":{"z_in":{"dtype":"float32","size":4},"a_in":{"dtype":"int8","size":1}},"outputs":{"output":{"dtype":"float32","size":4}}}]}},
             "external_dependencies":[{"short_name":"tvm_standalone_crt","url":"./runtime","url_type":"mlf_path","version_spec":"0.13.0"}]},
        "b":{"model_name":"b","executors":["aot"],"style":"full-model","target":["c"],"memory":{}}}}"#;
    let m = parse(doc);
    assert_eq!(m.modules.len(), 2);
    let e = m.module(None).unwrap_err();
    assert!(matches!(&e.kind, ErrorKind::AmbiguousModule(names) if names == "a, b"), "{e}");
    let a = m.module(Some("a")).unwrap();
    assert_eq!(a.tvm_version.as_deref(), Some("0.13.0"));
    // inputs are kept in the (alphabetical) order of the document, never used as argument order
    assert_eq!(a.memory.cpu_main().unwrap().inputs[0].name, "a_in");
    assert_eq!(m.module(Some("b")).unwrap().executor, ExecutorKind::Aot);
    let e = m.module(Some("c")).unwrap_err();
    assert!(matches!(&e.kind, ErrorKind::NoSuchModule { available, .. } if available == "a, b"));
}

#[test]
fn shape_contradicting_version_is_refused() {
    for (doc, field) in [
        (r#"{"version":2,"model_name":"m","runtimes":["graph"],"target":{"1":"c"},"memory":[]}"#, "memory"),
        (r#"{"version":1,"model_name":"m","runtimes":["graph"],"target":{"1":"c"},"memory":{}}"#, "memory"),
        (r#"{"version":5,"model_name":"m","executors":["graph"],"target":["c"],"memory":{}}"#, "target"),
        (r#"{"version":4,"model_name":"m","executors":["graph"],"target":{"1":"c"},"memory":{}}"#, "executors"),
        (r#"{"version":6,"modules":{},"model_name":"m"}"#, "modules"),
        (r#"{"version":7,"model_name":"m","executors":["graph"],"target":["c"],"memory":{}}"#, "modules"),
    ] {
        let e = Metadata::parse(doc.as_bytes()).unwrap_err();
        assert_eq!(e.field.as_deref(), Some(field), "{doc}: {e}");
    }
}

#[test]
fn operator_style_is_refused_even_under_v7() {
    let e = Metadata::parse(
        br#"{"version":7,"model_name":"m","style":"operator","executors":[],"target":["c"],"memory":{"f":[]}}"#,
    )
    .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::OperatorStyle), "{e}");
    let e =
        Metadata::parse(br#"{"version":4,"model_name":"m","runtimes":[],"target":{"1":"c"},"memory":{}}"#).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::OperatorStyle), "{e}");
}

#[test]
fn unknown_versions_are_refused() {
    for v in ["0", "8", "-1", "99"] {
        let doc = format!(r#"{{"version":{v},"model_name":"m"}}"#);
        let e = Metadata::parse(doc.as_bytes()).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::UnsupportedVersion(_)), "{v}: {e}");
        assert_eq!(e.field.as_deref(), Some("version"));
    }
}
