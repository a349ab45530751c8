//! The memory report: the description-and-plan part is deterministic (snapshot for the digits
//! model); the compiled part is measured from the real static library; the arena always equals
//! what the build allocates.

use std::path::Path;

use mlf_build::__private::measure_library;

fn digits() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/model/digits.tar")
}

const HOST: &str = if cfg!(target_os = "macos") { "aarch64-apple-darwin" } else { "x86_64-unknown-linux-gnu" };

#[test]
fn digits_report_from_the_description() {
    let desc = mlf_build::open(digits()).unwrap();
    let mut r = mlf_build::__private::memory_report(&desc, "digits", "TARGET", None, None).unwrap();
    r.file = "digits.tar".into();
    insta::assert_snapshot!(serde_json::to_string_pretty(&r).unwrap());
}

#[test]
fn digits_report_of_a_build_measures_the_compiled_c() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("SKIP digits_report_of_a_build_measures_the_compiled_c: written for x86_64 Linux hosts");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let path = digits().canonicalize().unwrap();
    let built = mlf_build::Model::open(&path).build_into(&path, out.path(), "report-test", HOST, HOST, false).unwrap();
    let r = built.report().unwrap();
    assert_eq!(r.ram.arena, built.arena_bytes);
    assert_eq!(r.ram.arena, 176);
    assert_eq!(r.flash.params, built.embedded_param_bytes);
    assert_eq!(r.flash.params, 9640);
    let s = measure_library(built.library.as_ref().unwrap()).unwrap();
    assert!(s.text > 200, "{s:?}");
    assert_eq!(r.flash.code, s.text);
    assert_eq!(r.ram.c_data, s.data + s.bss);
    assert_eq!(r.ram.total, r.ram.arena + r.ram.c_data);
    assert_eq!(r.flash.total, r.flash.code + r.flash.rodata + r.flash.data + r.flash.params);
    assert!(r.flash.measured && r.notes.is_empty(), "{r:?}");
    let text = r.to_string();
    let line = text.lines().find(|l| l.trim_start().starts_with("static RAM")).unwrap();
    assert!(line.contains(&format!(" {} bytes", r.ram.total)), "{text}");
    // The stack of a run: mlf's frames, the C's deepest chain, one leaf; no parameter source.
    let st = r.stack.as_ref().expect("a stack figure when the C was compiled");
    assert!(st.c > 0 && st.source == 0, "{st:?}");
    assert_eq!(st.total, st.runtime + st.c + st.leaf);
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("stack") && l.contains(&format!(" {} bytes", st.total))),
        "{text}"
    );
}

#[test]
fn aot_usmp_pool_counts_as_ram_and_its_constants_as_flash() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("aot_usmp_pool_counts_as_ram_and_its_constants_as_flash") else {
        return;
    };
    let path = fx.join("mlf/kws-int8-aot-usmp/model.tar");
    let desc = mlf_build::open(&path).unwrap();
    // Without compiling: the pools come from the description.
    let r = mlf_build::__private::memory_report(&desc, "kws", HOST, None, None).unwrap();
    assert_eq!(r.ram.usmp_pool, 56192);
    assert_eq!(r.ram.c_data, 56192);
    assert_eq!(r.flash.rodata, 53296);
    // The outputs are part of the arena, as the AOT plan places them (element-aligned, not
    // rounded up to 16): never more than the arena.
    assert_eq!((r.ram.outputs, r.ram.arena), (12, 12), "{r}");
    assert!(!r.flash.measured);
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return;
    }
    // Compiled: the pool is in the C's .bss, the constant pool in its read-only data.
    let out = tempfile::tempdir().unwrap();
    let built = mlf_build::Model::open(&path).build_into(&path, out.path(), "report-test", HOST, HOST, false).unwrap();
    let r = built.report().unwrap();
    assert_eq!(r.ram.arena, built.arena_bytes);
    // (The constant pool is in `.rodata.tvm` but not `const`: still read-only data, not RAM.)
    assert!(r.ram.c_data >= 56192 && r.ram.c_data < 56192 + 1024, "{r:?}");
    assert_eq!(r.ram.total, r.ram.arena + r.ram.c_data);
    assert!(r.flash.rodata >= 53296, "{r:?}");
    eprintln!("{r}");
}

/// An AOT USMP build whose constant pool is taken out: the workspace pool moves from the C's
/// static data into the arena, and is counted there once.
#[test]
fn aot_usmp_with_external_constants_counts_the_workspace_pool_once() {
    let Some(fx) = mlf_fixtures::fixtures_or_skip("aot_usmp_with_external_constants_counts_the_workspace_pool_once")
    else {
        return;
    };
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return;
    }
    let path = fx.join("mlf/digits-mlp-aot-usmp/model.tar");
    let path = if path.exists() { path } else { fx.join("mlf/digits-mlp-aot-usmp/model") };
    let desc = mlf_build::open(&path).unwrap();
    let pool = match &desc.executor {
        mlf_build::Executor::Aot(a) => a.usmp.as_ref().unwrap().workspace_bytes,
        _ => unreachable!(),
    };
    for params in [mlf_build::Placement::Resident, mlf_build::Placement::Streamed, mlf_build::Placement::Lazy] {
        let out = tempfile::tempdir().unwrap();
        let built = mlf_build::Model::open(&path)
            .params(params)
            .build_into(&path, out.path(), "report-test", HOST, HOST, false)
            .unwrap();
        let r = built.report().unwrap();
        eprintln!("{r}");
        assert_eq!(r.ram.arena, built.arena_bytes);
        assert!(r.ram.arena >= pool, "{r:?}");
        let s = measure_library(built.library.as_ref().unwrap()).unwrap();
        assert_eq!(r.ram.c_data, s.data + s.bss, "{r:?}");
        assert!(r.ram.c_data < pool, "the pool is in the arena, not the C: {r:?}");
        assert_eq!(r.ram.usmp_pool, 0, "{r:?}");
        assert_eq!(r.ram.total, r.ram.arena + r.ram.params + r.ram.c_data);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }
}

/// `inspect` shows the RAM mlf plans beside what TVM recorded in metadata (which is TVM's own
/// workspace figure, not what the generated module allocates): the same arena as the report.
#[test]
fn inspect_shows_the_planned_ram() {
    let (json, table) = mlf_build::__private::inspect::inspect_path(&digits(), &Default::default()).unwrap();
    assert!(table.contains("(as TVM recorded them in metadata; mlf plans its own: `planned`)"), "{table}");
    assert!(table.contains("\nplanned      arena 176 bytes (ARENA_BYTES of the generated module)"), "{table}");
    assert!(table.contains("; TVM's executor: 10144 bytes"), "{table}");
    assert_eq!(json["planned"]["arena_bytes"], 176, "{json}");
    let Some(fx) = mlf_fixtures::fixtures_or_skip("inspect_shows_the_planned_ram (KWS)") else { return };
    let (json, table) =
        mlf_build::__private::inspect::inspect_path(&fx.join("mlf/kws-int8-graph/model.tar"), &Default::default())
            .unwrap();
    assert!(table.contains("workspace 105348 bytes"), "{table}");
    // 72,192 bytes with in-place operators, below the tensor-level liveness bound (88,192).
    assert!(table.contains("planned      arena 72192 bytes (ARENA_BYTES of the generated module, of it 56192 for TVMBackendAllocWorkspace)"), "{table}");
    assert_eq!(json["planned"]["arena_bytes"], 72192, "{json}");
}
