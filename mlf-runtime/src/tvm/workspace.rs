//! The running model's workspace: a LIFO bump allocator over a region of its static arena,
//! serving `TVMBackendAllocWorkspace` / `TVMBackendFreeWorkspace`.
//!
//! One model runs at a time per thread (with `std`) or per program (without). A [`Session`]
//! installs the region for the duration of a run and records the high-water mark.

use core::cell::UnsafeCell;

use crate::error::{Error, Message};

/// Most allocations that may be live at once (nested scopes of the AOT main and its kernels).
pub const MAX_LIVE: usize = 128;
const _: () = assert!(MAX_LIVE.is_power_of_two(), "`free` masks its index with MAX_LIVE - 1");

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
    #[inline]
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

    /// Takes `nbytes` (rounded up to the alignment) from the top of the window; null, with the
    /// figures for the error, when they do not fit or too many allocations are live. Between
    /// runs the window is empty (`len == top == 0`), so every request fails.
    #[inline]
    pub(crate) fn alloc(&mut self, nbytes: u64) -> *mut u8 {
        let start = self.top;
        // `top <= len` always (`start`, `set_window`, `free` and this function keep it).
        let available = (self.len - start) as u64;
        let mask = self.align_mask as u64;
        // `nbytes <= available` first, so the rounding cannot overflow.
        if nbytes > available || ((nbytes + mask) & !mask) > available || self.depth >= MAX_LIVE {
            return self.refuse(nbytes, available);
        }
        let end = start + ((nbytes + mask) & !mask) as usize;
        self.starts[self.depth] = start;
        self.depth += 1;
        self.top = end;
        if end > self.high_water {
            self.high_water = end;
        }
        // SAFETY: `end <= len`, so the pointer stays inside the region installed by
        // `Session::enter`, which is valid for `len` bytes while the session lives.
        unsafe { self.base.add(start) }
    }

    /// A refused allocation: records why, returns null.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, requested: u64, available: u64) -> *mut u8 {
        self.exhaust(requested, available);
        core::ptr::null_mut()
    }

    /// Frees the most recent allocation (`ptr` must be it); -1, marking the run, otherwise.
    #[inline]
    pub(crate) fn free(&mut self, ptr: *mut u8) -> i32 {
        // Between runs `depth` is 0, so nothing is freed.
        let Some(last) = self.depth.checked_sub(1) else { return self.bad_free() };
        let start = self.starts[last & (MAX_LIVE - 1)];
        if ptr != self.base.wrapping_add(start) {
            return self.bad_free();
        }
        self.depth = last;
        self.top = start;
        0
    }

    #[cold]
    #[inline(never)]
    fn bad_free(&mut self) -> i32 {
        self.bad_free = true;
        -1
    }

    /// Ends a run: the window is emptied, so the C finds no workspace between runs.
    #[inline]
    fn stop(&mut self) {
        self.active = false;
        // A request of 0 bytes between runs gets null, as any other.
        self.base = core::ptr::null_mut();
        self.len = 0;
        self.top = 0;
        self.region_len = 0;
        self.depth = 0;
    }
}

#[cfg(feature = "std")]
std::thread_local! {
    static STATE: UnsafeCell<State> = const { UnsafeCell::new(State::new()) };
}

/// Runs `f` on this thread's workspace state.
#[cfg(feature = "std")]
#[inline]
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
#[inline]
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
    #[inline]
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
    #[inline]
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
    #[inline]
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
    #[inline]
    fn drop(&mut self) {
        with_state(State::stop);
        #[cfg(not(feature = "std"))]
        BUSY.store(false, core::sync::atomic::Ordering::Release);
    }
}

/// What serves the workspace of a [`Run`](super::Run): the window the C allocates from, and the check of
/// what a call left behind.
pub trait RunWorkspace {
    /// Moves the window to `[offset, offset + len)` of the run's arena (clamped to it); live
    /// allocations must have been freed.
    fn set_window(&mut self, offset: usize, len: usize);
    /// `Ok` when call `index` (`function`) returned `rc == 0` and freed everything it allocated,
    /// otherwise the error that says why.
    fn end_call(&self, index: u16, function: &'static str, rc: i32) -> Result<(), Error>;
    /// The highest arena offset the workspace reached this run.
    fn high_water(&self) -> usize;
}

impl RunWorkspace for Session<'static> {
    #[inline]
    fn set_window(&mut self, offset: usize, len: usize) {
        Session::set_window(self, offset, len);
    }

    #[inline]
    fn end_call(&self, index: u16, function: &'static str, rc: i32) -> Result<(), Error> {
        Session::end_call(self, index, function, rc)
    }

    #[inline]
    fn high_water(&self) -> usize {
        Session::high_water(self)
    }
}
