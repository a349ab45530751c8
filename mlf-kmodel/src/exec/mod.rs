//! Execution: runs a checked model's steps in order — CPU layers on the CPU, KPU layers on a
//! [`crate::kpu::KpuBackend`] (the device model or the K210's KPU) — with memory the caller
//! owns, and keeps the decoded steps in a [`Plan`] filled once.

mod plan;
mod run;
mod v3;
mod v4;

pub use plan::Plan;
pub use run::{Memory, Options, output, run, run_on};
pub use v4::{carry_shift_up, mul_and_carry_shift};
