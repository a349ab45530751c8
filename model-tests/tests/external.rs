//! External parameters: every placement (resident, streamed, lazy) and every source (split
//! folder, packed archive on disk, packed archive in memory without std) gives the reference
//! outputs; streaming needs exactly the largest operator's parameter bytes; lazy loading needs
//! the resident RAM and reads each file once, in the first run. (Damaged parameters are tested
//! in mlf-runtime/tests/params.rs.)

mod common;

use std::path::{Path, PathBuf};

use mlf_runtime::Error;
use mlf_runtime::params::{FlashArchive, Folder, PackedArchive, ParamErrorKind, ParamSource};

fn split_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("OUT_DIR")).join("split").join(name)
}

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Packs a split folder into a fresh tar in a temporary folder.
fn packed(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join(format!("{name}.tar"));
    mlf_build::pack_folder(&split_dir(name), &out).unwrap();
    (t, out)
}

/// [`check_external!`] for a model's resident, streamed and lazy builds.
macro_rules! check_placements {
    ([$res:path, $str:path, $lazy:path], $dir:expr, $split:expr, [$($inp:ident),*], [$($out:ident),*]) => {{
        check_external!(resident, $res, $dir, $split, [$($inp),*], [$($out),*]);
        check_external!(streamed, $str, $dir, $split, [$($inp),*], [$($out),*]);
        check_external!(lazy, $lazy, $dir, $split, [$($inp),*], [$($out),*]);
    }};
}

/// A copy of split `name` in a temporary folder with one byte of the file `pick` chooses
/// flipped; the folder and the file's identifier.
fn damaged_split(
    name: &str,
    params: &[mlf_runtime::params::ParamRef],
    pick: impl Fn(&mlf_runtime::params::ParamRef) -> bool,
) -> (tempfile::TempDir, PathBuf, &'static str) {
    let t = tempfile::tempdir().unwrap();
    let (from, to) = (split_dir(name), t.path().join("split"));
    std::fs::create_dir_all(to.join("params")).unwrap();
    std::fs::copy(from.join("configure.json"), to.join("configure.json")).unwrap();
    for f in std::fs::read_dir(from.join("params")).unwrap().flatten() {
        std::fs::copy(f.path(), to.join("params").join(f.file_name())).unwrap();
    }
    let p = params.iter().find(|p| pick(p)).unwrap();
    let path = to.join("params").join(format!("{}.bin", p.id));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[p.bytes / 2] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    (t, to, p.id)
}

/// A lazy model's run on `input` from a damaged split, then twice from the sound one: the damaged
/// file's error is `run`'s, the files read before it stay loaded (`loaded_before_failure` of
/// them), and the next run reads only what is missing; the third reads nothing. Returns the
/// second run's output bytes.
macro_rules! lazy_retry {
    ($m:path, $split:expr, $pick:expr, $input:ident: $data:expr, $out:ident, $loaded_before_failure:expr) => {{
        use $m as model;
        let (_t, damaged_dir, id) = damaged_split($split, &model::PARAMS, $pick);
        let $input = $data;
        let mut net = common::wait_take(model::Model::take);
        net.unload();
        let mut damaged = Folder::open(&damaged_dir).unwrap();
        match net.run(&model::Inputs { $input: &$input }, &mut damaged) {
            Err(Error::Param(p)) => assert_eq!((p.kind, p.id.as_str()), (ParamErrorKind::HashMismatch, id)),
            Err(other) => panic!("the read's error is lost: {other}"),
            Ok(_) => panic!("a damaged file was used"),
        }
        assert_eq!(net.params_loaded(), $loaded_before_failure, "the files read before the damaged one stay");
        let mut sound = Folder::open(split_dir($split)).unwrap();
        let mut counting = Counting { inner: &mut sound, reads: 0 };
        let out = mlf_runtime::as_bytes(&net.run(&model::Inputs { $input: &$input }, &mut counting).unwrap().$out[..])
            .to_vec();
        assert_eq!(counting.reads, model::PARAMS.len() - $loaded_before_failure, "only the missing files are read");
        let mut counting = Counting { inner: &mut sound, reads: 0 };
        net.run(&model::Inputs { $input: &$input }, &mut counting).unwrap();
        assert_eq!(counting.reads, 0);
        out
    }};
}

/// The input file and expected output bytes of case 0 of the fixture in `dir`, with its manifest.
fn case_zero(dir: &Path) -> (PathBuf, Vec<u8>, mlf_fixtures::Manifest) {
    let manifest = mlf_fixtures::Manifest::read(dir).unwrap();
    let case = &manifest.cases[0];
    let input = dir.join("vectors").join(case.inputs[0].file.as_ref().unwrap());
    let want = std::fs::read(dir.join("vectors").join(case.outputs[0].file.as_ref().unwrap())).unwrap();
    (input, want, manifest)
}

/// A damaged file met by a lazy graph model's run loop is returned by `run`; the next run with a
/// sound source reads only the files still missing.
#[test]
fn lazy_damaged_file_is_returned_and_read_again() {
    let dir = repo("examples/digits/model");
    let (input, want, manifest) = case_zero(&dir);
    // The second call's weights (1280 bytes): the first call's two files load before it.
    let out = lazy_retry!(
        model_tests::external::digits_lazy,
        "digits",
        |p| p.bytes == 1280,
        pixels: mlf_fixtures::load::<f32, 64>(&input),
        output,
        2
    );
    mlf_fixtures::compare(&manifest.cases[0].outputs[0].dtype, &out, &want, &manifest.cases[0]).unwrap();
}

/// The three sources for one split.
fn sources(name: &str) -> Vec<(&'static str, Box<dyn ParamSource>)> {
    let (_t, tar) = packed(name);
    let bytes: &'static [u8] = Box::leak(std::fs::read(&tar).unwrap().into_boxed_slice());
    vec![
        ("folder", Box::new(Folder::open(split_dir(name)).unwrap())),
        ("packed archive", Box::new(PackedArchive::open(&tar).unwrap())),
        ("archive in memory (no_std source)", Box::new(FlashArchive::new(bytes).unwrap())),
    ]
}

/// A source that counts the reads it passes on.
struct Counting<'a> {
    inner: &'a mut dyn ParamSource,
    reads: usize,
}

impl ParamSource for Counting<'_> {
    fn read(
        &mut self,
        p: &mlf_runtime::params::ParamRef,
        buf: &mut [u8],
    ) -> Result<(), mlf_runtime::params::ParamError> {
        self.reads += 1;
        self.inner.read(p, buf)
    }

    fn path_of(&self, p: &mlf_runtime::params::ParamRef) -> mlf_runtime::Message {
        self.inner.path_of(p)
    }
}

/// Runs every manifest case through a resident, streamed or lazy model with every source; a lazy
/// model reads each file once, in its first run (or none, when an earlier test loaded them), and
/// nothing after.
macro_rules! check_external {
    (@call resident, $net:ident, $src:ident, $ins:ident, $reads:ident) => {{
        $net.load(&mut *$src).unwrap();
        $net.run(&$ins)
    }};
    (@call streamed, $net:ident, $src:ident, $ins:ident, $reads:ident) => {
        $net.run(&$ins, &mut *$src)
    };
    (@call lazy, $net:ident, $src:ident, $ins:ident, $reads:ident) => {{
        let mut counting = Counting { inner: &mut *$src, reads: 0 };
        let out = $net.run(&$ins, &mut counting);
        $reads.push(counting.reads);
        out
    }};
    (@loaded lazy, $net:ident) => {
        $net.params_loaded()
    };
    (@loaded $mode:ident, $net:ident) => {
        0
    };
    (@after lazy, $net:ident, $reads:ident, $before:ident, $split:expr) => {{
        assert!($reads[1..].iter().all(|&n| n == 0), "{}: only the first run reads: {:?}", $split, $reads);
        assert_eq!($before + $reads[0], $net.params_loaded(), "{}: each file read once", $split);
        // Files no call reads (an array the C defines and never uses) are never loaded.
        assert!($net.params_loaded() > 0 && $net.params_loaded() <= model::PARAMS.len(), "{}", $split);
        // Lazy loading needs what resident loading needs.
        assert!(model::PARAM_BYTES >= model::PARAMS.iter().map(|p| p.bytes).sum::<usize>());
    }};
    (@after $mode:ident, $net:ident, $reads:ident, $before:ident, $split:expr) => {{
        let _ = (&$reads, $before);
    }};
    ($mode:ident, $m:path, $dir:expr, $split:expr, [$($inp:ident),*], [$($out:ident),*]) => {{
        use $m as model;
        let dir: PathBuf = $dir;
        let manifest = mlf_fixtures::Manifest::read(&dir).unwrap();
        let mut net = common::wait_take(model::Model::take);
        // Reads per run (counted for lazy models).
        #[allow(unused_mut)]
        let (mut reads, before): (Vec<usize>, usize) = (Vec::new(), check_external!(@loaded $mode, net));
        for (what, mut src) in sources($split) {
            for (ci, case) in manifest.cases.iter().enumerate() {
                let mut files = case.inputs.iter().map(|i| dir.join("vectors").join(i.file.as_ref().unwrap()));
                $( let $inp = mlf_fixtures::load(&files.next().unwrap()); )*
                let ins = model::Inputs { $($inp: &$inp),* };
                let out = check_external!(@call $mode, net, src, ins, reads)
                    .unwrap_or_else(|e: Error| panic!("{}: {what}: {e}", $split));
                let mut k = 0;
                $(
                    let want = &case.outputs[k];
                    let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
                    mlf_fixtures::compare(&want.dtype, mlf_runtime::as_bytes(&out.$out[..]), &expected, case)
                        .unwrap_or_else(|e| panic!("{} ({what}): case {ci} output {k}: {e}", $split));
                    k += 1;
                )*
                let _ = k;
            }
        }
        check_external!(@after $mode, net, reads, before, $split);
    }};
}

#[test]
fn digits_resident_streamed_and_lazy_from_every_source() {
    use model_tests::external::{digits_lazy, digits_resident, digits_streamed};
    check_placements!(
        [digits_resident, digits_streamed, digits_lazy],
        repo("examples/digits/model"),
        "digits",
        [pixels],
        [output]
    );
    // No parameter byte in the generated module: only identifiers, sizes and hashes.
    assert_eq!(digits_resident::PARAMS.len(), 4);
    assert_eq!(digits_resident::PARAM_BYTES, 8192 + 128 + 1280 + 48);
    // Lazy loading keeps the resident layout.
    assert_eq!(digits_lazy::PARAM_BYTES, digits_resident::PARAM_BYTES);
    assert_eq!(digits_lazy::PARAMS, digits_resident::PARAMS);
}

/// A Relax export's weights (constants of its VM executable) leave the image as a graph
/// model's parameters do, and reproduce its vectors in every placement and from every source.
#[test]
fn relax_export_resident_streamed_and_lazy_from_every_source() {
    use model_tests::relax::{cnn_lazy, cnn_resident, cnn_streamed};
    let dir = || repo("fixtures/relax/cnn-f32-fused-c");
    check_placements!([cnn_resident, cnn_streamed, cnn_lazy], dir(), "relax_cnn", [image], [output0]);
    assert_eq!(cnn_resident::PARAMS.len(), 4);
    assert_eq!(cnn_lazy::PARAM_BYTES, cnn_resident::PARAM_BYTES);
    // Streaming needs only the weights of the kernel that reads the most.
    assert!(cnn_streamed::STAGING_BYTES < cnn_resident::PARAM_BYTES);
}

#[test]
fn resident_run_before_load_is_an_error() {
    use mlf_runtime::params::{ParamError, ParamRef};
    use model_tests::external::digits_resident as model;
    /// A source that has nothing.
    struct Nothing;
    impl ParamSource for Nothing {
        fn read(&mut self, p: &ParamRef, _: &mut [u8]) -> Result<(), ParamError> {
            Err(ParamError::new(ParamErrorKind::Missing, p.id, "nowhere"))
        }
        fn path_of(&self, _: &ParamRef) -> mlf_runtime::Message {
            mlf_runtime::Message::new("nowhere")
        }
    }
    let mut net = common::wait_take(model::Model::take);
    let pixels = [0f32; 64];
    // Another test of this binary may have loaded the model; a failed load unloads it.
    assert!(matches!(net.load(&mut Nothing), Err(Error::Param(e)) if e.kind == ParamErrorKind::Missing));
    let e = net.run(&model::Inputs { pixels: &pixels }).unwrap_err();
    assert!(matches!(e, Error::Param(p) if p.kind == ParamErrorKind::NotLoaded), "{e}");
}

/// The staging buffer of a streamed model is exactly the largest number of parameter bytes one
/// operator reads (computed here from the graph, independently of the generator).
#[test]
fn streamed_staging_is_the_largest_operators_parameters() {
    fn largest_operator_params(model: &Path) -> usize {
        let desc = mlf_build::open(model).unwrap();
        let mlf_build::Executor::Graph(g) = &desc.executor else { unreachable!() };
        let graph = &g.graph;
        let mut best = 0;
        for node in &graph.nodes {
            let mut seen = std::collections::HashSet::new();
            let mut sum = 0;
            for r in &node.inputs {
                // (Nested rather than a let chain, which needs Rust 1.88.)
                if let Some(mlf_build::__private::model::ArgBinding::Param(i)) = g.bindings.get(&r.node) {
                    if seen.insert(desc.params[*i].data.as_slice().to_vec()) {
                        sum += desc.params[*i].bytes() as usize;
                    }
                }
            }
            best = best.max(sum);
        }
        best
    }
    let digits = repo("examples/digits/model/digits.tar");
    assert_eq!(model_tests::external::digits_streamed::STAGING_BYTES, largest_operator_params(&digits));
    assert_eq!(model_tests::external::digits_streamed::STAGING_BYTES, 8192 + 128);
    #[cfg(mlf_shared)]
    {
        let f = |n: &str| repo(&format!("../shared/fixtures/mlf/{n}/model.tar"));
        use model_tests::external_shared as e;
        assert_eq!(e::kws_graph_streamed::STAGING_BYTES, largest_operator_params(&f("kws-int8-graph")));
        assert_eq!(e::resnet8_streamed::STAGING_BYTES, largest_operator_params(&f("resnet8-int8-graph")));
        assert_eq!(
            e::cifar_v2_streamed::STAGING_BYTES,
            largest_operator_params(&f("guberti-tvm-graph-v2-cifar-lp0-syslib"))
        );
        eprintln!(
            "staging vs all parameters: kws {} / {} bytes, resnet8 {} / {} bytes",
            e::kws_graph_streamed::STAGING_BYTES,
            e::kws_graph_resident::PARAM_BYTES,
            e::resnet8_streamed::STAGING_BYTES,
            mlf_build::open(f("resnet8-int8-graph")).unwrap().param_bytes()
        );
    }
}

#[cfg(mlf_shared)]
mod shared {
    use super::*;
    use model_tests::external_shared as e;

    fn fixture(name: &str) -> PathBuf {
        repo(&format!("../shared/fixtures/mlf/{name}"))
    }

    #[test]
    fn graph_fixtures_with_external_parameters() {
        check_placements!(
            [e::kws_graph_resident, e::kws_graph_streamed, e::kws_graph_lazy],
            fixture("kws-int8-graph"),
            "kws_graph",
            [input_1],
            [identity]
        );
        check_placements!(
            [e::resnet8_resident, e::resnet8_streamed, e::resnet8_lazy],
            fixture("resnet8-int8-graph"),
            "resnet8",
            [input_1_int8],
            [identity_int8]
        );
        check_placements!(
            [e::multi_io_resident, e::multi_io_streamed, e::multi_io_lazy],
            fixture("multi-io-graph"),
            "multi_io",
            [audio, gain],
            [output0, output1]
        );
        check_placements!(
            [e::cifar_v2_resident, e::cifar_v2_streamed, e::cifar_v2_lazy],
            fixture("guberti-tvm-graph-v2-cifar-lp0-syslib"),
            "cifar_v2",
            [input_1_int8],
            [output]
        );
        check_placements!(
            [e::digits_graph_resident, e::digits_graph_streamed, e::digits_graph_lazy],
            fixture("digits-mlp-graph"),
            "digits_graph",
            [pixels],
            [output]
        );
    }

    #[test]
    fn aot_constant_pools_read_from_outside_the_code() {
        check_placements!(
            [e::digits_aot_usmp_resident, e::digits_aot_usmp_streamed, e::digits_aot_usmp_lazy],
            fixture("digits-mlp-aot-usmp"),
            "digits_aot_usmp",
            [pixels],
            [output]
        );
        check_placements!(
            [e::digits_aot_packed_resident, e::digits_aot_packed_streamed, e::digits_aot_packed_lazy],
            fixture("digits-mlp-aot-packed"),
            "digits_aot_packed",
            [pixels],
            [output]
        );
        check_placements!(
            [e::kws_aot_usmp_resident, e::kws_aot_usmp_streamed, e::kws_aot_usmp_lazy],
            fixture("kws-int8-aot-usmp"),
            "kws_aot_usmp",
            [input_1],
            [identity]
        );
        check_placements!(
            [e::cifar_esp32_resident, e::cifar_esp32_streamed, e::cifar_esp32_lazy],
            fixture("esp32-cifar-aot-v7-usmp"),
            "cifar_esp32",
            [input_1],
            [output]
        );
        // The pool as the compiler laid it out: metadata's 9640 bytes, rounded up by `sizeof` to
        // the struct's 16-byte alignment.
        assert_eq!(e::digits_aot_usmp_resident::PARAMS[0].bytes, 9648);
    }

    /// Constants the C held as per-operator arrays (AOT without USMP, graph with link-params) or
    /// behind TVM 0.8's `_lookup_linked_param`, read from outside the code.
    #[test]
    fn constant_arrays_and_linked_parameters_read_from_outside_the_code() {
        check_placements!(
            [e::digits_aot_c_resident, e::digits_aot_c_streamed, e::digits_aot_c_lazy],
            fixture("digits-mlp-aot-c"),
            "digits_aot_c",
            [pixels],
            [output]
        );
        check_placements!(
            [e::kws_aot_c_resident, e::kws_aot_c_streamed, e::kws_aot_c_lazy],
            fixture("kws-int8-aot-c"),
            "kws_aot_c",
            [input_1],
            [identity]
        );
        // kws' C defines one array no function reads (`fused_nn_conv2d_add_constant_25`): lazy
        // loading never reads it, resident loading does.
        let net = common::wait_take(e::kws_aot_c_lazy::Model::take);
        assert_eq!(net.params_loaded(), e::kws_aot_c_lazy::PARAMS.len() - 1);
        drop(net);
        check_placements!(
            [e::sine_aot_v5_resident, e::sine_aot_v5_streamed, e::sine_aot_v5_lazy],
            fixture("sine-aot-v5-c-iface"),
            "sine_aot_v5",
            [dense_4_input],
            [output]
        );
        check_placements!(
            [e::digits_graph_linked_resident, e::digits_graph_linked_streamed, e::digits_graph_linked_lazy],
            fixture("digits-mlp-graph-linked"),
            "digits_graph_linked",
            [pixels],
            [output]
        );
        check_placements!(
            [e::sine_graph_v7_resident, e::sine_graph_v7_streamed, e::sine_graph_v7_lazy],
            fixture("gvsoc-sine-graph-v7"),
            "sine_graph_v7",
            [dense_2_input],
            [identity]
        );
        check_placements!(
            [e::yesno_v4_resident, e::yesno_v4_streamed, e::yesno_v4_lazy],
            fixture("arduino-demos-kws-yesno-graph-v4"),
            "yesno_v4",
            [reshape_1],
            [output]
        );
    }

    /// A damaged parameter file met by the C main's stage hook (AOT, streamed constant arrays)
    /// stops the run with the `ParamError` that names it, not the main's failure; the model runs
    /// again with a sound source.
    #[test]
    fn a_damaged_array_file_is_reported_through_the_stage_hook() {
        use e::digits_aot_c_streamed as model;
        // The second call's weights (1280 bytes), read by the hook before that call.
        let (_t, to, weights) = damaged_split("digits_aot_c", &model::PARAMS, |p| p.bytes == 1280);
        let from = split_dir("digits_aot_c");
        let dir = fixture("digits-mlp-aot-c");
        let manifest = mlf_fixtures::Manifest::read(&dir).unwrap();
        let case = &manifest.cases[0];
        let pixels = mlf_fixtures::load(&dir.join("vectors").join(case.inputs[0].file.as_ref().unwrap()));
        let mut net = common::wait_take(model::Model::take);
        let mut damaged = Folder::open(&to).unwrap();
        match net.run(&model::Inputs { pixels: &pixels }, &mut damaged) {
            Err(Error::Param(p)) => {
                assert_eq!((p.kind, p.id.as_str()), (ParamErrorKind::HashMismatch, weights));
            }
            Err(other) => panic!("the hook's error is lost: {other}"),
            Ok(_) => panic!("a damaged file was used"),
        }
        let mut sound = Folder::open(&from).unwrap();
        let out = net.run(&model::Inputs { pixels: &pixels }, &mut sound).unwrap();
        let want = std::fs::read(dir.join("vectors").join(case.outputs[0].file.as_ref().unwrap())).unwrap();
        mlf_fixtures::compare(&case.outputs[0].dtype, mlf_runtime::as_bytes(&out.output[..]), &want, case).unwrap();
    }

    /// The same through an AOT main's stage hook (lazy constant arrays): the first call's two
    /// arrays load, the second call's weights fail, and the next run reads the two still missing.
    #[test]
    fn lazy_damaged_array_file_is_returned_through_the_stage_hook_and_read_again() {
        let dir = fixture("digits-mlp-aot-c");
        let (input, want, manifest) = case_zero(&dir);
        let out = lazy_retry!(
            e::digits_aot_c_lazy,
            "digits_aot_c",
            |p| p.bytes == 1280,
            pixels: mlf_fixtures::load::<f32, 64>(&input),
            output,
            2
        );
        mlf_fixtures::compare(&manifest.cases[0].outputs[0].dtype, &out, &want, &manifest.cases[0]).unwrap();
        // A USMP constant pool is one file, read whole before the main.
        let dir = fixture("digits-mlp-aot-usmp");
        let (input, want, manifest) = case_zero(&dir);
        let out = lazy_retry!(
            e::digits_aot_usmp_lazy,
            "digits_aot_usmp",
            |_| true,
            pixels: mlf_fixtures::load::<f32, 64>(&input),
            output,
            0
        );
        mlf_fixtures::compare(&manifest.cases[0].outputs[0].dtype, &out, &want, &manifest.cases[0]).unwrap();
    }

    /// Streaming constant arrays needs the largest operator's arrays: digits' first dense layer
    /// (8192 bytes of weights, 128 of bias), as for the model with a `.params` file; resident
    /// needs them all.
    #[test]
    fn streamed_constant_arrays_stage_the_largest_operators() {
        assert_eq!(e::digits_aot_c_streamed::STAGING_BYTES, 8192 + 128);
        assert_eq!(e::digits_graph_linked_streamed::STAGING_BYTES, 8192 + 128);
        assert_eq!(e::digits_aot_c_resident::PARAM_BYTES, 40 + 1280 + 128 + 8192 + 8 /* alignment */);
        // Lazy loading keeps the resident layout (and RAM).
        assert_eq!(e::digits_aot_c_lazy::PARAM_BYTES, e::digits_aot_c_resident::PARAM_BYTES);
        assert_eq!(e::kws_aot_c_lazy::PARAM_BYTES, e::kws_aot_c_resident::PARAM_BYTES);
        assert_eq!(e::kws_graph_lazy::PARAM_BYTES, e::kws_graph_resident::PARAM_BYTES);
        assert_eq!(e::kws_aot_usmp_lazy::PARAM_BYTES, e::kws_aot_usmp_resident::PARAM_BYTES);
        const { assert!(e::kws_aot_c_streamed::STAGING_BYTES < e::kws_aot_c_resident::PARAM_BYTES / 2) };
    }
}
