//! Every AOT fixture reproduces its reference vectors through build.rs + `include_model!`, and
//! uses the workspace window exactly when the compiler recorded a workspace (the window fits the
//! arena by a compile-time assertion in the generated module; the allocator never passes it).

mod common;

#[cfg(mlf_shared)]
mod shared {
    use std::path::PathBuf;

    use crate::{check_cases, common};

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/mlf").join(name)
    }

    /// Runs the cases, then checks and prints the workspace figures.
    macro_rules! aot_case {
        ($test:ident, $m:ident, $name:expr, [$($inp:ident),*], [$($out:ident),*]) => {
            #[test]
            fn $test() {
                use model_tests::aot::$m as model;
                let n = check_cases!(model_tests::aot::$m, fixture($name), [$($inp),*], [$($out),*]);
                assert!(n >= 1);
                eprintln!(
                    "{}: arena {} bytes, workspace window {} (TVM figure {}), last high-water {}",
                    $name, model::ARENA_BYTES, model::WORKSPACE_BYTES, model::TVM_WORKSPACE_BYTES, high_water_after_one_run()
                );
                fn high_water_after_one_run() -> usize {
                    let dir = fixture($name);
                    let manifest = mlf_fixtures::Manifest::read(&dir).unwrap();
                    let case = &manifest.cases[0];
                    let mut files = case.inputs.iter().map(|i| dir.join("vectors").join(i.file.as_ref().unwrap()));
                    $( let $inp = mlf_fixtures::load(&files.next().unwrap()); )*
                    let mut net = common::wait_take(model::Model::take);
                    net.run(&model::Inputs { $($inp: &$inp),* }).unwrap();
                    let hw = net.workspace_high_water();
                    if model::TVM_WORKSPACE_BYTES == 0 {
                        assert_eq!(hw, 0, "a USMP build must not call TVMBackendAllocWorkspace");
                    } else {
                        assert!(hw > 0, "a workspace of {} bytes was recorded but never allocated", model::TVM_WORKSPACE_BYTES);
                    }
                    hw
                }
            }
        };
    }

    aot_case!(digits_c_interface, digits_c, "digits-mlp-aot-c", [pixels], [output]);
    aot_case!(digits_packed_entry, digits_packed, "digits-mlp-aot-packed", [pixels], [output]);
    aot_case!(digits_usmp, digits_usmp, "digits-mlp-aot-usmp", [pixels], [output]);
    aot_case!(cifar_esp32_usmp_directory, cifar_esp32_usmp, "esp32-cifar-aot-v7-usmp", [input_1], [output]);
    aot_case!(kws_c_interface, kws_c, "kws-int8-aot-c", [input_1], [identity]);
    aot_case!(kws_usmp, kws_usmp, "kws-int8-aot-usmp", [input_1], [identity]);
    aot_case!(sine_v5_run_declared_but_not_defined, sine_v5, "sine-aot-v5-c-iface", [dense_4_input], [output]);
}
