//! AOT outputs whose dtype and shape only some sources record: archives derived from the digits
//! AOT archive with the relay text, metadata, interface header or C edited, so that each source
//! in the documented order is the one that answers, and `inspect`'s facts say which.

use mlf_build::ModelDesc;
use mlf_fixtures::derived::{self, Members};
use mlf_fixtures::write_members;

fn read(m: &Members) -> Result<ModelDesc, mlf_build::Error> {
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), m);
    mlf_build::open(dir.path())
}

fn output(m: &Members) -> (mlf_build::TensorInfo, ModelDesc) {
    let d = read(m).unwrap_or_else(|e| panic!("{e}"));
    (d.outputs[0].clone(), d)
}

fn fact<'a>(d: &'a ModelDesc, what: &str) -> &'a str {
    d.facts.iter().find(|f| f.what == what).map(|f| f.source.as_str()).unwrap_or_else(|| panic!("{:?}", d.facts))
}

#[test]
fn metadata_answers_first_then_the_header_gives_the_size() {
    let (o, d) = output(&derived::digits_aot_c());
    assert_eq!(
        (o.dtype.to_string(), o.shape.clone(), o.dtype_source.as_str()),
        ("float32".into(), vec![1, 10], "metadata.json")
    );
    assert!(fact(&d, "output 0 (output) shape").contains("metadata.json"));
    // Without metadata's inputs and outputs: the dtype from the main's typed parameter, the size
    // from the header's TVMGEN_DEFAULT_OUTPUT_SIZE.
    let (o, d) = output(&derived::without_metadata_io(derived::digits_aot_c()));
    assert_eq!((o.dtype.to_string(), o.shape.clone()), ("float32".into(), vec![1, 10]));
    assert!(o.dtype_source.contains("parameter `float* output_buffer_var`"), "{}", o.dtype_source);
    assert!(fact(&d, "output 0 (output) shape").contains("TVMGEN_DEFAULT_OUTPUT_SIZE"));
    assert!(fact(&d, "output 0 (output) dtype").contains("output_buffer_var"));
    assert_eq!(d.inputs[0].shape, vec![1, 64]);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn the_c_of_2021_tells_the_dtype_through_aliases_and_casts() {
    // A `void*` main: the dtype the last kernel's typed parameter has.
    let m = derived::untyped_main(derived::without_metadata_io(derived::digits_aot_c()));
    let (o, _) = output(&m);
    assert_eq!(o.dtype.to_string(), "float32");
    assert!(o.dtype_source.contains("tvmgen_default_fused_nn_softmax writes it as float"), "{}", o.dtype_source);
    // A `void*` kernel too (the archive): only the cast of its store says float.
    let m = derived::untyped_last_kernel(m);
    let (o, d) = output(&m);
    assert_eq!((o.dtype.to_string(), o.shape.clone()), ("float32".into(), vec![1, 10]));
    assert!(o.dtype_source.contains("writes it as float"), "{}", o.dtype_source);
    assert!(fact(&d, "output 0 (output) dtype").contains("softmax"));
    // And without the header's sizes nothing records the output's size but io_size_bytes, which
    // TVM 0.13 does not compute as inputs + outputs: the size checks still hold for what is there.
    let d = read(&derived::without_size_macros(m)).unwrap();
    assert!(fact(&d, "output 0 (output) shape").contains("io_size_bytes"), "{:?}", d.facts);
}

#[test]
fn the_relay_text_answers_before_everything_and_is_checked_against_the_sizes() {
    let m = derived::untyped_last_kernel(derived::untyped_main(derived::without_metadata_io(derived::digits_aot_c())));
    let (o, d) = output(&derived::relay_returns(m.clone(), "Tensor[(1, 1, 2, 5), float32]"));
    assert_eq!(o.shape, vec![1, 1, 2, 5]);
    assert_eq!(o.shape_source, "relay text (the return type of @main)");
    assert!(!d.facts.iter().any(|f| f.what.starts_with("output 0")), "{:?}", d.facts);
    // A return type that disagrees with TVMGEN_DEFAULT_OUTPUT_SIZE is refused, naming both.
    let e = read(&derived::relay_returns(m.clone(), "Tensor[(1, 12), float32]")).unwrap_err().to_string();
    assert!(e.contains("[1, 12] float32 is 48 bytes") && e.contains("TVMGEN_DEFAULT_OUTPUT_SIZE says 40"), "{e}");
    // A dtype that disagrees with the C is a warning naming both.
    let (o, d) = output(&derived::relay_returns(m, "Tensor[(1, 10), int32]"));
    assert_eq!(o.dtype.to_string(), "int32");
    assert!(d.warnings.iter().any(|w| w.contains("says int32") && w.contains("says float32")), "{:?}", d.warnings);
}

#[test]
fn nothing_to_tell_the_dtype_is_an_error_naming_the_sources() {
    let m = derived::untyped_last_kernel(derived::untyped_main(derived::without_metadata_io(derived::digits_aot_c())));
    let mut m = m;
    mlf_fixtures::edit_member(&mut m, derived::KERNELS, |t| {
        t.replace("((float*)T_softmax_norm)[i1_1] = ", "T_softmax_norm_unknown = ")
    });
    let e = read(&m).unwrap_err().to_string();
    assert!(e.contains("dtype of output 0 (output)") && e.contains("relay text") && e.contains("the C"), "{e}");
}
