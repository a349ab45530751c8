//! `run()` performs no heap allocation (checked with a counting global allocator), nor does a
//! lazily loading run reading its parameters from the `no_std` source.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

struct Counting;

thread_local! {
    /// Allocations made by this thread (tests run in parallel threads; the harness allocates too).
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

/// Allocations this thread made so far.
fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards to the system allocator unchanged, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // A thread being torn down has no counter left: not counted.
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn run_does_not_allocate() {
    let pixels = [0.5f32; 64];
    let mut model = model_tests::digits::Model::take().unwrap();
    let _ = model.run(&model_tests::digits::Inputs { pixels: &pixels }).unwrap();
    let before = allocs();
    for _ in 0..10 {
        let out = model.run(&model_tests::digits::Inputs { pixels: &pixels }).unwrap();
        assert!(out.output.iter().all(|p| p.is_finite()));
    }
    assert_eq!(allocs() - before, 0, "run() allocated");
}

/// Lazy loading: the first run, which reads every parameter from a packed archive in memory
/// (`FlashArchive`, the `no_std` source), and the later ones allocate nothing.
#[test]
fn lazy_loading_does_not_allocate() {
    use model_tests::external::digits_lazy as model;
    let t = tempfile::tempdir().unwrap();
    let tar = t.path().join("digits.tar");
    mlf_build::pack_folder(&PathBuf::from(env!("OUT_DIR")).join("split/digits"), &tar).unwrap();
    let bytes = std::fs::read(&tar).unwrap();
    let mut source = mlf_runtime::params::FlashArchive::new(&bytes).unwrap();
    let pixels = [0.5f32; 64];
    let mut net = model::Model::take().unwrap();
    let before = allocs();
    for _ in 0..3 {
        let out = net.run(&model::Inputs { pixels: &pixels }, &mut source).unwrap();
        assert!(out.output.iter().all(|p| p.is_finite()));
    }
    assert_eq!(allocs() - before, 0, "a lazily loading run allocated");
    assert_eq!(net.params_loaded(), model::PARAMS.len(), "the first run loaded every file");
}
