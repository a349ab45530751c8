//! The K210 KPU: its registers and layer words ([`regs`]), the KPU RAM layout ([`layout`]),
//! its arithmetic ([`arith`]), the backend interface and the driver both backends share
//! ([`KpuBackend`], [`init`], [`run_layer`]), the register-level device model
//! ([`DeviceModel`]) and, with the `k210` feature, the chip itself (`k210`).
//!
//! One implementation serves V3 `K210_CONV` layers and V4 `kpu_conv2d` nodes.

pub mod arith;
mod backend;
mod device;
#[cfg(feature = "k210")]
pub mod k210;
pub mod layout;
pub mod regs;

pub use arith::{
    ActivationRounding, ActivationSegment, ActivationTable, banker_shift, decode_activation, kpu_activation,
    sdk_carry_shift,
};
pub use backend::{KpuBackend, init, run_layer, wait_done};
pub use device::{DEFAULT_MODEL_ADDRESS, DeviceModel};
pub use layout::{download, map_bytes, row_layout, row_offset, upload};
pub use regs::{KPU_RAM_BYTES, KpuConv, KpuLayer, LayerWords, PoolType, Reg, sext};
