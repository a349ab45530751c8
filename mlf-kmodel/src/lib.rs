//! Kendryte K210 kmodels: a validating, zero-copy parser for V3 and V4 (V1 and unknown
//! versions are identified and refused, V5's header is read for inspection), and an
//! interpreter whose KPU layers run on a [`kpu::KpuBackend`]: the register-level
//! [`kpu::DeviceModel`] (bit-exact with nncase v0.2's simulator, anywhere) or, with the `k210`
//! feature, the K210's own KPU.
//!
//! Everything is checked once, by [`Model::parse`]: every table, body, block offset, memory
//! range and divisor. A damaged model is an error, never an out-of-bounds read. Running needs
//! no allocation: the caller supplies main memory, KPU RAM and scratch memory of the sizes in
//! [`Model::requirements`] (per backend: [`Requirements::for_backend`]), and a table of decoded
//! steps ([`Plan`]) filled once.
//!
//! The crate is layered; each layer uses only the ones before it: [`error`], `types`,
//! [`reader`], `float`, `nnil` (leaf helpers) → [`kpu`] (registers, KPU RAM layout,
//! arithmetic, backends) → `decode` (bytes to headers, layers, nodes) → `check` (against the
//! model's memory) → `exec` (runs). The public paths [`v3`], [`v4`], [`v5`] gather each
//! version's items.
//!
//! ```
//! use mlf_kmodel::{identify, Version};
//! assert_eq!(identify(b"LDMK\x05\0\0\0"), Ok(Version::V5));
//! assert!(identify(&[1, 0, 0, 0, 1, 0, 0, 0]).is_err()); // V1: refused, and says so
//! ```

#![no_std]
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod check;
mod decode;
pub mod error;
mod exec;
mod float;
pub mod kpu;
mod nnil;
#[cfg(feature = "profile")]
pub mod profile;
pub mod reader;
mod types;
mod views;

pub use check::Model;
pub use decode::{Step, Version, identify};
pub use error::{Block, KmodelError, Part, Pool};
pub use exec::{Memory, Options, Plan, output, run, run_on};
pub use kpu::{ActivationRounding, kpu_activation};
pub use reader::Body;
pub use types::{Backend, BackendMemory, DataType, IoInfo, Requirements};
pub use views::{as_f32_array, as_u8_array, f32_bytes};

/// kmodel V3 (nncase v0.1): layer types, header, layers, the checked model.
pub mod v3 {
    pub use crate::check::v3::Model;
    pub use crate::decode::v3::{Header, Layer, Pool2d, Shape, decode, kind, kind_name};
}

/// kmodel V4 (nncase v0.2): opcodes, header, nodes and their value types, the checked model.
pub mod v4 {
    pub use crate::check::v4::Model;
    pub use crate::decode::v4::{
        Clamp, HEADER, Header, MemRange, Node, Padding, Requant, Shape, Window, decode, numel, op, op_name, slice_len,
    };
    pub use crate::exec::{carry_shift_up, mul_and_carry_shift};
}

/// kmodel V5 (nncase ≥ 1.0): header, modules, mempools and sections, for inspection.
pub mod v5 {
    pub use crate::decode::v5::*;
}
