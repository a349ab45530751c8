//! USMP pools held to what the kernels touch (issue 25, class 2): archives derived from the
//! repository's digits AOT USMP archive whose workspace pool is declared smaller than the kernels
//! index (in the C alone, or in the C, the header and the metadata together) are refused before
//! anything is built, naming the member and the pool; every USMP fixture still reads. Class 5 too:
//! a `tvmgen_default_run` that differs from the interface header's prototype or structs.

use mlf_build::__private::read::mlf::usmp_reach;
use mlf_fixtures::{edit_member, replace_once, tar_members, workspace_root, write_members};

type Members = Vec<(String, Vec<u8>)>;

fn usmp() -> Members {
    tar_members(&workspace_root().join("mlf-build/tests/models/digits-aot-usmp.tar"))
}

fn open(m: &Members) -> Result<mlf_build::ModelDesc, String> {
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), m);
    mlf_build::open(dir.path()).map_err(|e| e.to_string())
}

#[test]
fn the_kernels_reach_is_what_the_c_indexes() {
    let d = open(&usmp()).unwrap();
    let far = usmp_reach::furthest(&d).unwrap();
    // The dense kernels' scratch at 176 (5 floats) and 128 (8 floats): 196 bytes, the pool's size.
    assert_eq!(far.get(&false).map(|f| f.0), Some(196), "{far:?}");
    // The last constant array ends at 9600 + 10 floats.
    assert_eq!(far.get(&true).map(|f| f.0), Some(9640), "{far:?}");
}

#[test]
fn a_workspace_pool_smaller_than_its_kernels_touch_is_refused() {
    let lib0 = "codegen/host/src/default_lib0.c";
    let header = "codegen/host/include/tvmgen_default.h";
    // The C alone: its size disagrees with the header's and the metadata's.
    let mut m = usmp();
    edit_member(&mut m, lib0, |t| replace_once(t, "global_workspace[196]", "global_workspace[16]"));
    let e = open(&m).unwrap_err();
    assert!(e.contains("16 bytes in the C") && e.contains("196") && e.contains("tvmgen_default.h"), "{e}");
    // All three changed: the kernels' reach decides.
    edit_member(&mut m, header, |t| replace_once(t, "WORKSPACE_SIZE 196", "WORKSPACE_SIZE 16"));
    edit_member(&mut m, "metadata.json", |t| {
        t.replace("\"workspace_size_bytes\": 196", "\"workspace_size_bytes\": 16")
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("default_lib1.c") && e.contains("reaches 196 bytes into global_workspace"), "{e}");
    // A kernel whose scratch moved past the pool's end.
    let mut m = usmp();
    edit_member(&mut m, "codegen/host/src/default_lib1.c", |t| {
        t.replace("(&(global_workspace_5_var[176]))", "(&(global_workspace_5_var[180]))")
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("reaches 200 bytes into global_workspace, which is 196"), "{e}");
}

#[test]
fn a_kernel_reading_past_the_recorded_constant_pool_is_refused() {
    let mut m = usmp();
    edit_member(&mut m, "codegen/host/src/default_lib1.c", |t| {
        t.replace("(&(global_const_workspace_4_var[9600]))", "(&(global_const_workspace_4_var[9640]))")
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("reaches 9680 bytes into global_const_workspace, which is 9640"), "{e}");
}

#[test]
fn an_access_into_a_pool_that_cannot_be_bounded_is_refused() {
    let mut m = usmp();
    edit_member(&mut m, "codegen/host/src/default_lib1.c", |t| {
        replace_once(
            t,
            "((float*)compute_global_let)[x_c_init] = 0",
            "((float*)compute_global_let)[(int32_t)p0[0]] = 0",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("default_lib1.c") && e.contains("cannot bound") && e.contains("global_workspace_5_var"), "{e}");
}

#[test]
fn every_usmp_fixture_reads() {
    let Some(root) = mlf_fixtures::fixtures_or_skip("every_usmp_fixture_reads") else { return };
    for f in mlf_fixtures::mlf_fixtures(&root) {
        let d = mlf_build::open(&f.model).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let far = usmp_reach::furthest(&d).unwrap();
        eprintln!("{}: {far:?}", f.name);
    }
}

#[test]
fn a_constant_pool_shorter_than_what_its_kernels_read_is_refused_when_taken_out() {
    if !std::process::Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    let host = "x86_64-unknown-linux-gnu";
    let build = |m: &Members| {
        let dir = tempfile::tempdir().unwrap();
        write_members(dir.path(), m);
        let out = tempfile::tempdir().unwrap();
        mlf_build::Model::open(dir.path())
            .params(mlf_build::Placement::Resident)
            .build_into(dir.path(), out.path(), "usmp", host, host, false)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    build(&usmp()).unwrap();
    // The struct's last member shortened (10 floats → 2): 9616 bytes compiled.
    let mut m = usmp();
    let lib0 = "codegen/host/src/default_lib0.c";
    edit_member(&mut m, lib0, |t| {
        replace_once(
            t,
            "float fused_nn_contrib_dense_pack_constant_1_let[10]",
            "float fused_nn_contrib_dense_pack_constant_1_let[2]",
        )
    });
    let e = build(&m).unwrap_err();
    assert!(e.contains("compiles to 9616 bytes but metadata.json records 9640"), "{e}");
    // Metadata changed to agree: the kernels' reach decides (already when the archive is read).
    edit_member(&mut m, "metadata.json", |t| {
        t.replace("\"constants_size_bytes\": 9640", "\"constants_size_bytes\": 9616")
    });
    let e = build(&m).unwrap_err();
    assert!(e.contains("reaches 9640 bytes into global_const_workspace, which is 9616"), "{e}");
}

/// Issue 25, class 5: the AOT entry mlf calls is held to the interface header.
#[test]
fn an_aot_entry_that_differs_from_its_header_is_refused() {
    let lib0 = "codegen/host/src/default_lib0.c";
    let run = "int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,struct tvmgen_default_outputs* outputs)";
    open(&usmp()).unwrap();
    // An extra parameter.
    let mut m = usmp();
    edit_member(&mut m, lib0, |t| {
        replace_once(
            t,
            run,
            "int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,struct tvmgen_default_outputs* outputs, int32_t* extra)",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(
        e.contains("default_lib0.c")
            && e.contains("tvmgen_default_outputs*, int32_t*)")
            && e.contains("tvmgen_default.h"),
        "{e}"
    );
    // Its own inputs struct, with more members than the header's (without the header).
    let mut m = usmp();
    edit_member(&mut m, lib0, |t| {
        replace_once(
            t,
            "#include <tvmgen_default.h>",
            "struct tvmgen_default_inputs { void* pixels; void* more[64]; };\nstruct tvmgen_default_outputs { void* output; };",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("default_lib0.c") && e.contains("without including tvmgen_default.h"), "{e}");
    // Its own struct beside the header, renamed around it by the preprocessor.
    let mut m = usmp();
    edit_member(&mut m, lib0, |t| {
        replace_once(
            t,
            "#include <tvmgen_default.h>",
            "#include <tvmgen_default.h>\n#define tvmgen_default_inputs evil_inputs\nstruct tvmgen_default_inputs { void* pixels; void* more[64]; };",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("defines struct tvmgen_default_inputs"), "{e}");
    let mut m = usmp();
    edit_member(&mut m, lib0, |t| {
        replace_once(
            t,
            "#include <tvmgen_default.h>",
            "#include <tvmgen_default.h>\n#  define tvmgen_default_outputs evil",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("#define or #undef of a tvmgen_ name"), "{e}");
}

#[test]
fn a_pointer_into_the_pool_passed_to_a_kernel_is_held_to_what_the_kernel_touches() {
    let lib1 = "codegen/host/src/default_lib1.c";
    // The dense kernel writes 10 floats through T_add: from 160 that ends at 200, past 196.
    let mut m = usmp();
    edit_member(&mut m, lib1, |t| {
        replace_once(
            t,
            "void* sid_2_let = (&(global_workspace_1_var[128]));",
            "void* sid_2_let = (&(global_workspace_1_var[160]));",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("tvmgen_default___tvm_main__ reaches 200 bytes into global_workspace, which is 196"), "{e}");
    // Passed on inside an expression: not followed, refused.
    let mut m = usmp();
    edit_member(&mut m, lib1, |t| {
        replace_once(
            t,
            "tvmgen_default_fused_nn_softmax(sid_2_let,",
            "tvmgen_default_fused_nn_softmax(((float*)sid_2_let) + 40,",
        )
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("passes sid_2_let") && e.contains("expression"), "{e}");
}

/// A padding kernel reads before the pointer it is given only where its guard excludes it; with
/// the guard weakened, the read before the pool's start is refused (real KWS int8 AOT USMP).
#[test]
fn a_kernel_reading_before_its_pool_is_refused_and_its_guard_is_read() {
    let Some(root) = mlf_fixtures::fixtures_or_skip("a_kernel_reading_before_its_pool_is_refused") else { return };
    let kws = tar_members(&root.join("mlf/kws-int8-aot-usmp/model.tar"));
    let lib1 = "codegen/host/src/default_lib1.c";
    open(&kws).expect("the guarded padding reads inside its input");
    let mut m = kws.clone();
    edit_member(&mut m, lib1, |t| replace_once(t, "((4 <= i0_i1_fused) && (i0_i1_fused < 53))", "(i0_i1_fused < 53)"));
    let e = open(&m).unwrap_err();
    assert!(e.contains("bytes before the start of global_workspace") && e.contains("default_lib1.c"), "{e}");
    // A disjunction guards nothing.
    let mut m = kws;
    edit_member(&mut m, lib1, |t| {
        replace_once(t, "((4 <= i0_i1_fused) && (i0_i1_fused < 53))", "((4 <= i0_i1_fused) || (i0_i1_fused < 53))")
    });
    let e = open(&m).unwrap_err();
    assert!(e.contains("bytes before the start of global_workspace"), "{e}");
}
