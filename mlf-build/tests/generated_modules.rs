//! Golden files of generated modules: one per executor and parameter placement the
//! repository's models cover (graph: embedded, resident, streamed, two inputs and outputs,
//! constant arrays in the C, embedded or taken out; AOT: the C interface with constant arrays,
//! a packed entry, a USMP build, each in every placement; kmodels V3 and V4), generated exactly
//! as `build.rs` generates them.
//!
//! What depends on where the checkout is — the hash in the output folder's names and the
//! symbol prefix derived from it — is replaced by `HASH` and `mlf_PREFIX_`. Review a change with
//! `cargo insta review` (or set `INSTA_UPDATE=always` and read the diff of `tests/snapshots/`).

use std::path::{Path, PathBuf};

use mlf_build::__private::codegen::{IncludePath, render};
use mlf_build::Placement;

const HOST: &str = if cfg!(target_os = "macos") { "aarch64-apple-darwin" } else { "x86_64-unknown-linux-gnu" };

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models")
}

/// Replaces what depends on the checkout's location: `-<16 hex digits>` (the hash in a built
/// model's key) and `mlf_<8 hex digits>_` (the symbol prefix).
fn normalise(text: &str, out_dir: &Path) -> String {
    let text = text.replace(&out_dir.display().to_string(), "$OUT_DIR");
    let root = mlf_fixtures::workspace_root().canonicalize().unwrap();
    let text = text.replace(&root.display().to_string(), "$ROOT");
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("mlf_") && rest.len() > 13 && hex(&rest[4..12]) && rest.as_bytes()[12] == b'_' {
            out.push_str("mlf_PREFIX_");
            rest = &rest[13..];
        } else if c == '-' && rest.len() > 17 && hex(&rest[1..17]) && !hex(&rest[17..18]) {
            out.push_str("-HASH");
            rest = &rest[17..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The module `build.rs` generates for `model` with parameters in `placement`.
fn generated(model: &Path, placement: Placement) -> String {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().canonicalize().unwrap();
    let built = mlf_build::Model::open(model)
        .params(placement)
        .build_into(model, &out_dir, "mlf-snapshots", HOST, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    normalise(&std::fs::read_to_string(&built.rust_file).unwrap(), &out_dir)
}

fn check(name: &str, model: &Path, placements: &[Placement]) {
    for &p in placements {
        insta::assert_snapshot!(format!("{name}_{p}"), generated(model, p));
    }
}

#[test]
fn graph_modules() {
    check("graph_digits", &mlf_fixtures::digits_tar(), &Placement::ALL);
    check("graph_multi_io", &models().join("multi-io-graph.tar"), &[Placement::Embedded]);
    check("graph_linked_constants", &models().join("digits-graph-linked.tar"), &Placement::ALL);
}

#[test]
fn aot_modules() {
    check("aot_c_interface", &models().join("digits-aot-c.tar"), &Placement::ALL);
    check("aot_packed", &models().join("digits-aot-packed.tar"), &Placement::ALL);
    check("aot_usmp", &models().join("digits-aot-usmp.tar"), &Placement::ALL);
}

#[test]
fn kmodel_modules() {
    use mlf_fixtures::kmodel_synth::{v3_fc, v4_conv};
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("kmodel_v3_fully_connected", v3_fc()), ("kmodel_v4_kpu_conv", v4_conv().0)] {
        let path = dir.path().join(format!("{name}.kmodel"));
        std::fs::write(&path, bytes).unwrap();
        let include = IncludePath::InEnv { var: "CARGO_MANIFEST_DIR", path: "/models/net.kmodel".into() };
        let (_, tokens) = mlf_build::__private::kmodel_module(
            &path,
            &include,
            mlf_build::__private::plan::limits::DEFAULT_MAX_STATIC_BYTES,
        )
        .unwrap();
        let header = ["The items of `pub mod net` that `include_model!(\"models/net.kmodel\")` expands to.".into()];
        insta::assert_snapshot!(name, render::text(&tokens, &header).unwrap());
    }
}

/// The V4 model with a KPU convolution, its KPU layers on the K210's own KPU: no KPU RAM static,
/// the KPU taken with the model, `ARENA_BYTES` without the emulation's memory.
#[test]
fn kmodel_module_on_the_k210() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.kmodel");
    std::fs::write(&path, mlf_fixtures::kmodel_synth::v4_conv().0).unwrap();
    let include = IncludePath::InEnv { var: "CARGO_MANIFEST_DIR", path: "/models/net.kmodel".into() };
    let (_, tokens) =
        mlf_build::__private::kmodel_module_on(&path, &include, mlf_build::Kpu::K210, u64::MAX, None).unwrap();
    let text = render::text(&tokens, &["`include_model!(\"models/net.kmodel\", kpu = k210)`.".into()]).unwrap();
    assert!(!text.contains("KPU_RAM_BYTES") && text.contains("K210::new(") && text.contains("run_on("), "{text}");
    insta::assert_snapshot!("kmodel_v4_kpu_conv_k210", text);
}

/// A graph model built for a shared arena: its `ARENA` is the shared one, `take` borrows the
/// arena's handle, and the module says which arena and how much of it it uses.
#[test]
fn graph_module_in_a_shared_arena() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().canonicalize().unwrap();
    let model = mlf_fixtures::digits_tar();
    let built = mlf_build::Model::open(&model)
        .shared_arena("detect")
        .build_into(&model, &out_dir, "mlf-snapshots", HOST, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = normalise(&std::fs::read_to_string(&built.rust_file).unwrap(), &out_dir);
    assert!(text.contains("use super::detect::ARENA;") && !text.contains("static ARENA"), "{text}");
    assert!(text.contains("arena: &mut super::detect::Arena,"), "{text}");
    assert_eq!(mlf_build::__private::built_shared_arena(&built.rust_file).as_deref(), Some("detect"));
    insta::assert_snapshot!("graph_digits_shared_arena", text);
    // Not an identifier: refused, naming the option.
    let e = mlf_build::Model::open(&model)
        .shared_arena("two words")
        .build_into(&model, &out_dir, "mlf-snapshots", HOST, HOST, false)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("arena: `two words` is not a Rust identifier"), "{e}");
}

/// A kmodel built for a shared arena: its whole state lives in the arena, zeroed and written
/// when the model is taken.
#[test]
fn kmodel_module_in_a_shared_arena() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.kmodel");
    std::fs::write(&path, mlf_fixtures::kmodel_synth::v4_conv().0).unwrap();
    let include = IncludePath::InEnv { var: "CARGO_MANIFEST_DIR", path: "/models/net.kmodel".into() };
    let kpu = mlf_build::Kpu::DeviceModel;
    let (_, tokens) = mlf_build::__private::kmodel_module_on(&path, &include, kpu, u64::MAX, Some("detect")).unwrap();
    let text = render::text(&tokens, &["`include_model!(\"models/net.kmodel\", arena = detect)`.".into()]).unwrap();
    assert!(text.contains("super::detect::ARENA.zeroed_as::<State>()") && !text.contains("static STATE"), "{text}");
    insta::assert_snapshot!("kmodel_v4_kpu_conv_shared_arena", text);
}

/// The module and library `build.rs` makes of `model` with profiling `on` or off.
fn built_with_profile(model: &Path, on: bool) -> (String, Vec<u8>) {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().canonicalize().unwrap();
    let built = mlf_build::Model::open(model)
        .profile(on)
        .build_into(model, &out_dir, "mlf-snapshots", HOST, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    let lib = std::fs::read(built.library.as_ref().unwrap()).unwrap();
    (normalise(&std::fs::read_to_string(&built.rust_file).unwrap(), &out_dir), lib)
}

/// Profiling an AOT model: off, the module is the one without profiling (the golden above)
/// and its C never calls the hook; on, the main's C calls the module's hook around each
/// kernel call, and the module names the calls and exports the hook. A graph model's module
/// (profiled by the runtime) is the same either way.
#[test]
fn aot_module_profiled() {
    let hook = b"mlf_profile_op";
    let has = |lib: &[u8]| lib.windows(hook.len()).any(|w| w == hook);
    for (name, model) in [("aot_c_interface", "digits-aot-c.tar"), ("aot_usmp", "digits-aot-usmp.tar")] {
        let model = models().join(model);
        let (off, off_lib) = built_with_profile(&model, false);
        assert_eq!(off, generated(&model, Placement::Embedded), "{name}: profiling off changed the module");
        assert!(!has(&off_lib), "{name}: the library without profiling calls the hook");
        let (on, on_lib) = built_with_profile(&model, true);
        assert!(has(&on_lib), "{name}: the profiled library never calls the hook");
        assert!(on.contains("export_name = \"mlf_PREFIX_mlf_profile_op\""), "{on}");
        insta::assert_snapshot!(format!("{name}_profiled"), on);
    }
    let digits = mlf_fixtures::digits_tar();
    assert_eq!(built_with_profile(&digits, true).0, built_with_profile(&digits, false).0);
}

/// The module `build.rs` generates for `model` in `placement` with its arena and parameters in
/// the link sections `.dtcm` and `.psram_ro`, and the parameter assembly it compiles.
fn generated_in_sections(model: &Path, placement: Placement) -> (String, Option<String>) {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().canonicalize().unwrap();
    let built = mlf_build::Model::open(model)
        .params(placement)
        .arena_section(".dtcm")
        .params_section(".psram_ro")
        .build_into(model, &out_dir, "mlf-snapshots", HOST, HOST, false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        mlf_build::__private::built_sections(&built.rust_file),
        (Some(".dtcm".into()), Some(".psram_ro".into())),
        "the header names both sections"
    );
    let asm = walk(&out_dir).into_iter().find(|p| p.file_name().is_some_and(|n| n == "mlf_params.S"));
    let module = normalise(&std::fs::read_to_string(&built.rust_file).unwrap(), &out_dir);
    (module, asm.map(|p| std::fs::read_to_string(p).unwrap()))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// Arena and parameters in link sections: the `ARENA` static (and an external placement's
/// region) carry `#[link_section]`, embedded parameters are assembled into the named section;
/// without the options the module is the one above (the goldens without sections).
#[test]
fn modules_in_link_sections() {
    let digits = mlf_fixtures::digits_tar();
    let (text, asm) = generated_in_sections(&digits, Placement::Embedded);
    assert!(text.contains("#[unsafe(link_section = \".dtcm\")]\nstatic ARENA:"), "{text}");
    let asm = asm.expect("embedded parameters are assembled");
    assert!(asm.contains(".section .psram_ro,\"a\"") && !asm.contains(".rodata."), "{asm}");
    insta::assert_snapshot!("graph_digits_embedded_in_sections", text);
    let (text, _) = generated_in_sections(&digits, Placement::Resident);
    assert!(text.contains("#[unsafe(link_section = \".psram_ro\")]\nstatic PARAM_REGION:"), "{text}");
    insta::assert_snapshot!("graph_digits_resident_in_sections", text);
    let (text, _) = generated_in_sections(&models().join("digits-aot-c.tar"), Placement::Streamed);
    assert!(text.contains("#[unsafe(link_section = \".dtcm\")]\nstatic ARENA:"), "{text}");
    assert!(text.contains("#[unsafe(link_section = \".psram_ro\")]\nstatic STAGING:"), "{text}");
}

/// A kmodel's state (its byte arenas) and its file in link sections.
#[test]
fn kmodel_module_in_link_sections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.kmodel");
    std::fs::write(&path, mlf_fixtures::kmodel_synth::v4_conv().0).unwrap();
    let include = IncludePath::InEnv { var: "CARGO_MANIFEST_DIR", path: "/models/net.kmodel".into() };
    let sections = mlf_build::__private::codegen::Sections { arena: Some(".dtcm"), params: Some(".psram_ro") };
    let kpu = mlf_build::Kpu::DeviceModel;
    let (_, tokens) = mlf_build::__private::kmodel_module_in(&path, &include, kpu, u64::MAX, (None, sections)).unwrap();
    let header =
        ["`include_model!(\"models/net.kmodel\", arena_section = \".dtcm\", params_section = \".psram_ro\")`.".into()];
    let text = render::text(&tokens, &header).unwrap();
    assert!(text.contains("#[unsafe(link_section = \".dtcm\")]\nstatic STATE:"), "{text}");
    assert!(text.contains("#[unsafe(link_section = \".psram_ro\")]\nstatic MODEL:"), "{text}");
    insta::assert_snapshot!("kmodel_v4_kpu_conv_in_sections", text);
    // On a shared arena, the arena's declaration chooses the section.
    let e = mlf_build::__private::kmodel_module_in(&path, &include, kpu, u64::MAX, (Some("detect"), sections))
        .unwrap_err()
        .to_string();
    assert!(e.contains("arena_section") && e.contains("shared_arena!(detect: … in \".dtcm\")"), "{e}");
}

/// A section name that could not be one is refused before anything is built, naming the option
/// and the model file.
#[test]
fn bad_section_names_are_refused() {
    let digits = mlf_fixtures::digits_tar();
    let out = tempfile::tempdir().unwrap();
    for (model, option) in [
        (mlf_build::Model::open(&digits).arena_section(".ps ram"), "arena_section"),
        (mlf_build::Model::open(&digits).params_section(".x\",\"ax\"\n.text"), "params_section"),
    ] {
        let e = model.build_into(&digits, out.path(), "mlf-snapshots", HOST, HOST, false).err().expect("refused");
        let m = e.to_string();
        assert!(m.contains(option) && m.contains("is not allowed") && m.contains("digits"), "{m}");
    }
}
