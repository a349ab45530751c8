//! `run()` performs no heap allocation (checked with a counting global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
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
    let before = ALLOCS.load(Ordering::SeqCst);
    for _ in 0..10 {
        let out = model.run(&model_tests::digits::Inputs { pixels: &pixels }).unwrap();
        assert!(out.output.iter().all(|p| p.is_finite()));
    }
    assert_eq!(ALLOCS.load(Ordering::SeqCst) - before, 0, "run() allocated");
}
