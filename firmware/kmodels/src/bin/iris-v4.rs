//! Iris (kmodel V4, nncase v0.2): within the fixture's tolerance (1e-6) of an independent float
//! re-implementation.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/iris_v4.rs"));
kmodels::kmodel_program!(iris_v4, device_support::check::decode::<f32, 4>, bit_exact = false);
