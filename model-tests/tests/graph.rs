//! Every graph-executor fixture reproduces its reference vectors through build.rs +
//! `include_model!` (integers exactly, floats within the case's tolerance).

mod common;

use std::path::PathBuf;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[test]
fn digits_from_the_repository() {
    let n = check_cases!(model_tests::digits, repo("examples/digits/model"), [pixels], [output]);
    assert_eq!(n, 10);
}

#[test]
fn both_modules_of_one_archive() {
    let dir = repo("examples/digits/model");
    let n1 = check_cases!(model_tests::two_modules::first, dir.clone(), [pixels], [output]);
    let n2 = check_cases!(model_tests::two_modules::second, dir, [pixels], [output]);
    assert_eq!((n1, n2), (10, 10));
    assert_eq!(model_tests::two_modules::second::NAME, "other");
}

#[cfg(mlf_shared)]
mod shared {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        repo(&format!("../shared/fixtures/mlf/{name}"))
    }

    #[test]
    fn yesno_v4_linked_params() {
        check_cases!(model_tests::graph::yesno_v4, fixture("arduino-demos-kws-yesno-graph-v4"), [reshape_1], [output]);
    }

    #[test]
    fn digits_mlp_graph() {
        check_cases!(model_tests::graph::digits_mlp_graph, fixture("digits-mlp-graph"), [pixels], [output]);
    }

    #[test]
    fn digits_mlp_graph_linked() {
        check_cases!(
            model_tests::graph::digits_mlp_graph_linked,
            fixture("digits-mlp-graph-linked"),
            [pixels],
            [output]
        );
    }

    #[test]
    fn cifar_v2() {
        check_cases!(
            model_tests::graph::cifar_v2,
            fixture("guberti-tvm-graph-v2-cifar-lp0-syslib"),
            [input_1_int8],
            [output]
        );
    }

    #[test]
    fn sine_v7_extracted_directory() {
        check_cases!(model_tests::graph::sine_v7, fixture("gvsoc-sine-graph-v7"), [dense_2_input], [identity]);
    }

    #[test]
    fn kws_int8_graph() {
        check_cases!(model_tests::graph::kws_int8_graph, fixture("kws-int8-graph"), [input_1], [identity]);
    }

    #[test]
    fn multi_io_graph() {
        check_cases!(model_tests::graph::multi_io_graph, fixture("multi-io-graph"), [audio, gain], [output0, output1]);
    }

    #[test]
    fn resnet8_int8_graph() {
        check_cases!(
            model_tests::graph::resnet8_int8_graph,
            fixture("resnet8-int8-graph"),
            [input_1_int8],
            [identity_int8]
        );
    }
}

/// Two models whose C defines the very same symbol names (`tvmgen_default_*`) link into this
/// one test binary and run side by side.
#[cfg(mlf_shared)]
#[test]
fn two_models_with_the_same_c_symbols_run_side_by_side() {
    use model_tests::graph::{kws_int8_graph as kws, multi_io_graph as mio};
    let mut a = common::wait_take(kws::Model::take);
    let mut b = common::wait_take(mio::Model::take);
    let x = [0i8; 490];
    let audio = [0.25f32; 16];
    let gain = [2i8; 16];
    let ya = a.run(&kws::Inputs { input_1: &x }).unwrap().identity.to_vec();
    let yb = b.run(&mio::Inputs { audio: &audio, gain: &gain }).unwrap().output0.to_vec();
    // Run again interleaved: each model keeps its own state and symbols.
    assert_eq!(a.run(&kws::Inputs { input_1: &x }).unwrap().identity.to_vec(), ya);
    assert_eq!(b.run(&mio::Inputs { audio: &audio, gain: &gain }).unwrap().output0.to_vec(), yb);
}
