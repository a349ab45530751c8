//! The running model's workspace: a LIFO bump allocator over a region of its static arena,
//! serving `TVMBackendAllocWorkspace` / `TVMBackendFreeWorkspace`.
//!
//! One model runs at a time per thread (with `std`) or per program (without). A [`Session`]
//! installs the region for the duration of a run and records the high-water mark.

use core::cell::UnsafeCell;

use crate::error::{Error, Message};

/// Most allocations that may be live at once (nested scopes of the AOT main and its kernels).
pub const MAX_LIVE: usize = 128;

pub(crate) struct State {
    active: bool,
    base: *mut u8,
    region_len: usize,
    len: usize,
    top: usize,
    /// Allocation alignment minus one (a power of two minus one, at least 15 while active).
    align_mask: usize,
    high_water: usize,
    starts: [usize; MAX_LIVE],
    depth: usize,
    pub(crate) last_error: Message,
    exhausted: bool,
    requested: u64,
    available: u64,
    bad_free: bool,
}

impl State {
    /// The state between runs: every byte zero, so the static lives in `.bss`.
    const fn new() -> Self {
        State {
            active: false,
            base: core::ptr::null_mut(),
            region_len: 0,
            len: 0,
            top: 0,
            align_mask: 0,
            high_water: 0,
            starts: [0; MAX_LIVE],
            depth: 0,
            last_error: Message::empty(),
            exhausted: false,
            requested: 0,
            available: 0,
            bad_free: false,
        }
    }

    /// Starts a run over `len` bytes at `base` (the entries of `starts` are not cleared: only
    /// those below `depth` are ever read).
    fn start(&mut self, base: *mut u8, len: usize, align: usize) {
        self.active = true;
        self.base = base;
        self.region_len = len;
        self.len = len;
        self.top = 0;
        self.align_mask = align.max(16).next_power_of_two() - 1;
        self.high_water = 0;
        self.depth = 0;
        self.last_error.clear();
        self.exhausted = false;
        self.bad_free = false;
    }

    fn exhaust(&mut self, requested: u64, available: u64) {
        self.exhausted = true;
        self.requested = requested;
        self.available = available;
    }

    pub(crate) fn alloc(&mut self, nbytes: u64) -> *mut u8 {
        if !self.active {
            self.exhaust(nbytes, 0);
            return core::ptr::null_mut();
        }
        let available = (self.len - self.top) as u64;
        let mask = self.align_mask as u64;
        let rounded = nbytes.checked_add(mask).map(|n| n & !mask);
        match rounded {
            Some(r) if r <= available && self.depth < MAX_LIVE => {
                let start = self.top;
                self.starts[self.depth] = start;
                self.depth += 1;
                self.top += r as usize;
                self.high_water = self.high_water.max(self.top);
                // SAFETY: `start + r <= len`, so the pointer stays inside the region installed by
                // `Session::enter`, which is valid for `len` bytes while the session lives.
                unsafe { self.base.add(start) }
            }
            _ => {
                self.exhaust(nbytes, available);
                core::ptr::null_mut()
            }
        }
    }

    pub(crate) fn free(&mut self, ptr: *mut u8) -> i32 {
        if !self.active || self.depth == 0 {
            self.bad_free = true;
            return -1;
        }
        let start = self.starts[self.depth - 1];
        if ptr != self.base.wrapping_add(start) {
            self.bad_free = true;
            return -1;
        }
        self.depth -= 1;
        self.top = start;
        0
    }
}

#[cfg(feature = "std")]
std::thread_local! {
    static STATE: UnsafeCell<State> = const { UnsafeCell::new(State::new()) };
}

/// Runs `f` on this thread's workspace state.
#[cfg(feature = "std")]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    // SAFETY: the state is thread-local and `with_state` is never re-entered: neither `f`
    // closures here nor the C callbacks that reach this function call back into it.
    STATE.with(|s| f(unsafe { &mut *s.get() }))
}

#[cfg(not(feature = "std"))]
struct Global(UnsafeCell<State>);
// SAFETY: without `std` the state is only touched between a successful `Session::enter` (which
// takes the `BUSY` flag) and its drop, i.e. by one running model at a time.
#[cfg(not(feature = "std"))]
unsafe impl Sync for Global {}
#[cfg(not(feature = "std"))]
static STATE: Global = Global(UnsafeCell::new(State::new()));
#[cfg(not(feature = "std"))]
static BUSY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

#[cfg(not(feature = "std"))]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    // SAFETY: see `Global`: only the session holder (or C code it called) reaches this, and the
    // reference does not outlive `f`.
    f(unsafe { &mut *STATE.0.get() })
}

/// A model run in progress: the workspace region is installed until it is dropped.
pub struct Session<'a> {
    _region: core::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> Session<'a> {
    /// Installs `region` (aligned to `align`, a power of two ≥ 16) as the workspace.
    /// Fails with [`Error::Busy`] when another model is running on this thread (or, without
    /// `std`, anywhere).
    pub fn enter(region: &'a mut [u8], align: usize) -> Result<Session<'a>, Error> {
        let len = region.len();
        Self::enter_raw(region.as_mut_ptr(), len, align)
    }

    /// [`Session::enter`] over `len` bytes at `base`, a pointer the caller keeps using (a
    /// [`Run`](super::run::Run) places tensors through the same pointer, so both must share one
    /// provenance: a second `&mut` to the region would invalidate the first pointer).
    pub(crate) fn enter_raw(base: *mut u8, len: usize, align: usize) -> Result<Session<'a>, Error> {
        #[cfg(not(feature = "std"))]
        if !crate::cell::try_set(&BUSY) {
            return Err(Error::Busy);
        }
        let ok = with_state(|s| {
            if s.active {
                return false;
            }
            s.start(base, len, align);
            true
        });
        if !ok {
            return Err(Error::Busy);
        }
        Ok(Session { _region: core::marker::PhantomData })
    }

    /// Moves the workspace to `[offset, offset + len)` of the region given to `enter` (graph
    /// models give each operator its own slot). Live allocations must have been freed.
    pub fn set_window(&mut self, offset: usize, len: usize) {
        with_state(|s| {
            let start = offset.min(s.region_len);
            let end = offset.saturating_add(len).min(s.region_len);
            if s.depth == 0 {
                s.top = start;
                s.len = end;
            }
        });
    }

    /// Turns a non-zero return code of `function` (call `index`) into an [`Error`].
    #[cold]
    pub fn failure(&self, index: u16, function: &'static str, code: i32) -> Error {
        with_state(|s| {
            if s.exhausted {
                s.exhausted = false;
                Error::WorkspaceExhausted { requested: s.requested, available: s.available }
            } else if s.bad_free {
                Error::BadWorkspaceFree
            } else {
                Error::OperatorFailed { index, function, code, message: s.last_error }
            }
        })
    }

    /// Checks the workspace after a call that returned 0: every allocation must be freed.
    pub fn check_balanced(&self, index: u16, function: &'static str) -> Result<(), Error> {
        if with_state(|s| s.depth != 0 || s.bad_free) {
            return Err(unbalanced(index, function));
        }
        Ok(())
    }

    /// Ends a call of `function` (call `index`) that returned `rc`: `Ok` when it returned 0 and
    /// freed everything it allocated, otherwise the error that says why.
    #[inline]
    pub(crate) fn end_call(&self, index: u16, function: &'static str, rc: i32) -> Result<(), Error> {
        let clean = with_state(|s| s.depth == 0 && !s.bad_free);
        if rc == 0 && clean {
            return Ok(());
        }
        Err(if rc != 0 { self.failure(index, function, rc) } else { unbalanced(index, function) })
    }

    /// The highest offset (from the start of the region) the workspace reached so far.
    pub fn high_water(&self) -> usize {
        with_state(|s| s.high_water)
    }
}

/// The error of a call that returned 0 with workspace still allocated (or freed out of order).
#[cold]
fn unbalanced(index: u16, function: &'static str) -> Error {
    Error::OperatorFailed { index, function, code: 0, message: Message::new("workspace not freed in LIFO order") }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        with_state(|s| s.active = false);
        #[cfg(not(feature = "std"))]
        BUSY.store(false, core::sync::atomic::Ordering::Release);
    }
}
