//! Runs two kmodels (V3 and V4, each with KPU layers) on the K210's own KPU through
//! `mlf_kmodel::kpu::k210`, with the statics a generated module has: the model 256-byte aligned,
//! the plan and main memory zero-initialised, no KPU RAM copy. Built to prove that the driver
//! compiles and links for riscv64gc-unknown-none-elf and where its memory lands; it is never run
//! (no emulator has the KPU). The V4 model also runs on the device model from one static that
//! holds plan, main memory, emulated KPU RAM and scratch together, as generated modules do today.

#![no_std]
#![no_main]

use mlf_kmodel::kpu::KpuBackend;
use mlf_kmodel::kpu::k210::{Hardware, K210};
use mlf_kmodel::{KmodelError, Memory, Options, Plan};
use mlf_runtime::{Arena, TakeOnce};

#[allow(dead_code)] // each model module carries every figure; not all are used for both
mod models {
    include!(concat!(env!("OUT_DIR"), "/models.rs"));
}

/// Bytes with the 256-byte alignment the KPU needs for its tables.
#[repr(C, align(256))]
struct Aligned256<T: ?Sized>(T);

static MODEL_V3: &Aligned256<[u8]> = &Aligned256(*include_bytes!(env!("K210_CHECK_V3")));
static MODEL_V4: &Aligned256<[u8]> = &Aligned256(*include_bytes!(env!("K210_CHECK_V4")));

#[unsafe(no_mangle)]
static PLAN_V3: TakeOnce<Plan<'static, { models::v3::STEPS }>> = TakeOnce::new(Plan::new());
#[unsafe(no_mangle)]
static MAIN_V3: TakeOnce<Arena<{ models::v3::MAIN }>> = TakeOnce::new(Arena::new());
#[unsafe(no_mangle)]
static PLAN_V4: TakeOnce<Plan<'static, { models::v4::STEPS }>> = TakeOnce::new(Plan::new());
#[unsafe(no_mangle)]
static MAIN_V4: TakeOnce<Arena<{ models::v4::MAIN }>> = TakeOnce::new(Arena::new());

/// The device-model state as one struct, the way generated modules keep it.
struct DeviceState {
    plan: Plan<'static, { models::v4::STEPS }>,
    main: Arena<{ models::v4::MAIN }>,
    kpu: Arena<{ models::v4::DEVICE_KPU_RAM }>,
    scratch: Arena<{ models::v4::DEVICE_SCRATCH }>,
}

#[unsafe(no_mangle)]
static DEVICE_STATE: TakeOnce<DeviceState> =
    TakeOnce::new(DeviceState { plan: Plan::new(), main: Arena::new(), kpu: Arena::new(), scratch: Arena::new() });

/// The V4 model on the device model.
fn run_device_model() -> Result<u8, KmodelError> {
    let mut state = DEVICE_STATE.take().ok_or(KmodelError::OutputLayout)?;
    let DeviceState { plan, main, kpu, scratch } = &mut *state;
    let memory = Memory { main: &mut main.0, kpu: &mut kpu.0, scratch: &mut scratch.0 };
    plan.run(&MODEL_V4.0, memory, &[0u8; models::v4::INPUT], Options::default())?;
    Ok(plan.output(&main.0, &kpu.0, 0)?[0])
}

fn run() -> Result<u8, KmodelError> {
    let mut kpu = K210::new(Hardware::take().ok_or(KmodelError::OutputLayout)?);
    let (mut plan, mut main) = (PLAN_V3.take().ok_or(KmodelError::OutputLayout)?, MAIN_V3.take().unwrap());
    let input = [0u8; models::v3::INPUT];
    let mut scratch = [0u8; models::v3::SCRATCH];
    plan.run_on(&MODEL_V3.0, &mut kpu, &mut main.0, &mut scratch, &input)?;
    let a = plan.output(&main.0, kpu.ram(), 0)?[0];
    let (mut plan, mut main) = (PLAN_V4.take().unwrap(), MAIN_V4.take().unwrap());
    let input = [0u8; models::v4::INPUT];
    let mut scratch = [0u8; models::v4::SCRATCH];
    plan.run_on(&MODEL_V4.0, &mut kpu, &mut main.0, &mut scratch, &input)?;
    Ok(a ^ plan.output(&main.0, kpu.ram(), 0)?[0])
}

#[riscv_rt::entry]
fn main() -> ! {
    let r = (run(), run_device_model());
    core::hint::black_box(&r);
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
