//! Iris (kmodel V3, nncase v0.1): the published output, bit for bit.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/iris_v3.rs"));
kmodels::kmodel_program!(iris_v3, device_support::check::decode::<f32, 4>, bit_exact = true);
