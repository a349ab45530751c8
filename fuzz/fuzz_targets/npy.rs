//! `cargo mlf run`'s input reader (`.npy` or raw bytes) on arbitrary bytes, for an input whose
//! dtype and shape come from the first bytes: must never panic or allocate by an untrusted size.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mlf_build::{DType, TensorInfo};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let dtypes = ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "int8x4"];
    let dtype = DType::parse(dtypes[sel as usize % dtypes.len()]).unwrap();
    let shape = match sel / 16 {
        0 => vec![1, 4],
        1 => vec![3],
        2 => vec![1 << 20],
        3 => vec![1 << 32, 1 << 32],
        _ => vec![2, 2, 2],
    };
    let t = TensorInfo { name: "x".into(), ident: "x".into(), dtype, shape, shape_source: "fuzz".into(), dtype_source: "fuzz".into() };
    if let Ok(raw) = mlf_build::__private::npy::input_bytes(rest.to_vec(), &t) {
        if let Ok(file) = mlf_build::__private::npy::output_npy(&t, &raw) {
            assert_eq!(mlf_build::__private::npy::input_bytes(file, &t).unwrap(), raw, "write(read(x)) read back differs");
        }
    }
});
