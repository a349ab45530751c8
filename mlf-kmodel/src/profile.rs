//! The per-operator profiling hook (feature `profile`): the runtimes call [`before`] and
//! [`after`] around each operator — a graph model's call, a kmodel's layer or node, and any
//! executor added later (it only has to call the two functions) — with the operator's index
//! and name. Firmware installs one [`Hook`] with [`set_hook`], typically reading a cycle
//! counter (DWT `CYCCNT` on Cortex-M, `mcycle` on RISC-V); see `docs/profiling.md`.
//!
//! Without the feature this module does not exist and the runtimes call nothing: the code and
//! its instruction count are exactly those of a build without profiling.
//!
//! The hook lives in this lowest crate so that both `mlf-kmodel`'s interpreter and
//! `mlf-runtime` (which re-exports it as `mlf_runtime::profile`) call the same one.

use core::sync::atomic::{AtomicPtr, Ordering};

/// Where an operator is about to run, or has just run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Before the operator.
    Before,
    /// After the operator (not called when the operator failed: the run stops with its error).
    After,
}

/// What runs an operator: the CPU or an accelerator (the K210's KPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// The CPU (TVM kernels, kmodel CPU layers).
    Cpu,
    /// The K210's KPU.
    Kpu,
}

/// One hook call: the edge, the operator's index in its model's run (calls of a graph model,
/// steps of a kmodel, in order), its name and where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Before or after.
    pub edge: Edge,
    /// The operator's index (0-based, in run order).
    pub index: u32,
    /// The operator's name (a TVM function name, a kmodel layer name).
    pub name: &'static str,
    /// CPU or KPU.
    pub unit: Unit,
}

/// The profiling hook: called with every [`Event`]. It runs inside the model's run, so it must
/// be short and must not run a model.
pub type Hook = fn(&Event);

/// The installed hook (a `fn` pointer stored as a data pointer; null: none).
static HOOK: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Installs `hook` for every later operator of every model (replacing the previous one).
pub fn set_hook(hook: Hook) {
    HOOK.store(hook as *mut (), Ordering::Release);
}

/// Removes the hook: later operators call nothing.
pub fn clear_hook() {
    HOOK.store(core::ptr::null_mut(), Ordering::Release);
}

/// Calls the hook, if one is installed, with `event`.
#[inline]
#[allow(unsafe_code)] // the static-memory boundary: a `fn` pointer kept in an atomic.
pub fn emit(event: Event) {
    let p = HOOK.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: the only non-null values stored are `Hook` fn pointers (`set_hook`); fn and
        // data pointers have the same size on every target this crate builds for.
        let hook: Hook = unsafe { core::mem::transmute::<*mut (), Hook>(p) };
        hook(&event);
    }
}

/// Signals that operator `index` (`name`, on `unit`) is about to run.
#[inline]
pub fn before(index: u32, name: &'static str, unit: Unit) {
    emit(Event { edge: Edge::Before, index, name, unit });
}

/// Signals that operator `index` (`name`, on `unit`) has run.
#[inline]
pub fn after(index: u32, name: &'static str, unit: Unit) {
    emit(Event { edge: Edge::After, index, name, unit });
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::sync::Mutex;
    use std::vec::Vec;

    use super::*;

    static SEEN: Mutex<Vec<Event>> = Mutex::new(Vec::new());

    fn record(e: &Event) {
        SEEN.lock().unwrap().push(*e);
    }

    #[test]
    fn the_installed_hook_sees_each_event_and_none_after_clearing() {
        set_hook(record);
        before(3, "conv", Unit::Kpu);
        after(3, "conv", Unit::Kpu);
        clear_hook();
        before(4, "add", Unit::Cpu);
        let seen = SEEN.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                Event { edge: Edge::Before, index: 3, name: "conv", unit: Unit::Kpu },
                Event { edge: Edge::After, index: 3, name: "conv", unit: Unit::Kpu },
            ]
        );
    }
}
