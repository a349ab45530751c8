//! The workspace of one AOT model whose C mlf compiled: `TVMBackendAllocWorkspace` and
//! `TVMBackendFreeWorkspace` are served inline in the model's C (a LIFO bump allocator defined
//! in the header mlf includes into every C file of the model) from a [`ModelWorkspace`], a
//! static of the model's generated module. No global state and no call out of the C: two models
//! never share it, and the run's cost beyond the kernels is a few loads and stores.
//!
//! The C reads and writes the same fields the Rust side does: [`Fields`] is `#[repr(C)]`, in the
//! order and C types of the `struct` mlf-build declares (pointers and `size_t` are `usize`, the
//! figures of a refusal `uint64_t`). A run installs the region with
//! [`ModelWorkspace::install`]; the returned [`Installed`] handle points the window, checks each
//! call and empties the window when it is dropped, so between runs the C gets no workspace.

use core::cell::UnsafeCell;

use super::run::Run;
use super::workspace::RunWorkspace;
use crate::cell::StaticArena;
use crate::error::{Error, Message};

/// Bytes of the message field of every [`ModelWorkspace`]: what the model's C was compiled with
/// must agree (the generated module checks it when it compiles).
pub const WORKSPACE_MESSAGE_BYTES: usize = Message::CAPACITY;

/// `status` bit: an allocation was refused (it did not fit, or too many were live).
const REFUSED: usize = 1;
/// `status` bit: a free was not of the most recent allocation.
const BAD_FREE: usize = 2;

/// What the model's C and the run share. Between runs the window is empty (`top == limit`),
/// so every request is refused.
#[repr(C)]
struct Fields<const N: usize> {
    /// Start of the region the run installed (the model's arena).
    base: *mut u8,
    /// Highest `top` this run.
    high: *mut u8,
    /// First free byte of the window.
    top: *mut u8,
    /// End of the window (`top <= limit` always).
    limit: *mut u8,
    /// Live allocations (`starts[1..=depth]`).
    depth: usize,
    /// [`REFUSED`] and [`BAD_FREE`].
    status: usize,
    /// Bytes of `message` set by `TVMAPISetLastError`.
    message_len: usize,
    /// Bytes of the last refused request.
    requested: u64,
    /// Bytes the window had left then.
    available: u64,
    /// The message of the last `TVMAPISetLastError` (cut to [`Message::CAPACITY`] bytes).
    message: [u8; Message::CAPACITY],
    /// [`SENTINEL`], then each live allocation, oldest first.
    starts: [*mut u8; N],
}

/// `starts[0]`: an address no allocation has, so a free with nothing live is refused without
/// a test of `depth`.
const SENTINEL: *mut u8 = usize::MAX as *mut u8;

/// The workspace state of one model (at most `N - 1` live allocations), shared with its C under
/// the model's private symbol name. Used only by the holder of the model's take-once state
/// (its `Model`) or, through the module's hidden `entry` items, by a tool calling the entry
/// point itself.
#[repr(transparent)]
pub struct ModelWorkspace<const N: usize>(UnsafeCell<Fields<N>>);

// SAFETY: the state is touched only through `install`, whose caller guarantees exclusive use
// until the `Installed` handle is dropped (a generated `Model` holds the take-once state that
// owns the workspace), and by the model's C, which runs only inside such a run.
unsafe impl<const N: usize> Sync for ModelWorkspace<N> {}

impl<const N: usize> ModelWorkspace<N> {
    /// An empty workspace (every byte zero, so the static lives in `.bss`; the sentinel is
    /// written when it is installed).
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        ModelWorkspace(UnsafeCell::new(Fields {
            base: core::ptr::null_mut(),
            high: core::ptr::null_mut(),
            top: core::ptr::null_mut(),
            limit: core::ptr::null_mut(),
            depth: 0,
            status: 0,
            message_len: 0,
            requested: 0,
            available: 0,
            message: [0; Message::CAPACITY],
            starts: [core::ptr::null_mut(); N],
        }))
    }

    /// Installs the `len` bytes at `base` for a run, with an empty window (see
    /// [`Installed::set_window`]); the high-water mark, the live allocations and the last error
    /// start over.
    ///
    /// # Safety
    /// Until the returned handle is dropped, the caller has exclusive use of this workspace and
    /// of the `len` bytes at `base` (valid for writes), and no other handle of this workspace
    /// is alive. The model's C runs only while it is installed (a run, or a tool's own
    /// installation): before the first, the sentinel is not written yet.
    #[inline]
    pub unsafe fn install(&'static self, base: *mut u8, len: usize) -> Installed<N> {
        let f = self.0.get();
        // SAFETY: exclusive use (the caller's contract); no reference to the fields is held.
        unsafe {
            (*f).base = base;
            (*f).high = base;
            (*f).top = base;
            (*f).limit = base;
            (*f).depth = 0;
            (*f).status = 0;
            (*f).message_len = 0;
            if N > 0 {
                (*f).starts[0] = SENTINEL;
            }
        }
        Installed { fields: f, region_len: len }
    }
}

/// A [`ModelWorkspace`] installed for a run; dropping it empties the window.
pub struct Installed<const N: usize> {
    fields: *mut Fields<N>,
    region_len: usize,
}

impl<const N: usize> Installed<N> {
    /// Moves the window to `[offset, offset + len)` of the installed region (clamped to it).
    /// Live allocations must have been freed (otherwise the window stays).
    #[inline]
    pub fn set_window(&mut self, offset: usize, len: usize) {
        let start = offset.min(self.region_len);
        let end = offset.saturating_add(len).min(self.region_len);
        // SAFETY: exclusive use while the handle lives (`install`'s contract); the C is not
        // running (`&mut self`).
        unsafe {
            if (*self.fields).depth == 0 {
                let base = (*self.fields).base;
                (*self.fields).top = base.wrapping_add(start);
                (*self.fields).limit = base.wrapping_add(end);
            }
        }
    }

    /// Ends a call of `function` (call `index`) that returned `rc`: `Ok` when it returned 0,
    /// freed everything it allocated in LIFO order and had no allocation refused; otherwise
    /// the error that says why.
    #[inline]
    pub fn end_call(&self, index: u16, function: &'static str, rc: i32) -> Result<(), Error> {
        // SAFETY: as in `set_window`; the call has returned.
        let unclean = unsafe { (*self.fields).depth | (*self.fields).status };
        if rc == 0 && unclean == 0 {
            return Ok(());
        }
        // SAFETY: as above.
        Err(unsafe { failure(self.fields, index, function, rc) })
    }

    /// The highest offset (from the start of the region) the workspace reached this run.
    #[inline]
    pub fn high_water(&self) -> usize {
        // SAFETY: as in `end_call`.
        unsafe { ((*self.fields).high as usize).wrapping_sub((*self.fields).base as usize) }
    }
}

/// The error of a call that failed (`code`) or left the workspace unclean: what the C recorded.
/// Out of line and given the fields' address, so a run keeps its handle in registers.
///
/// # Safety
/// `fields` is an installed workspace's, and the C is not running.
#[cold]
#[inline(never)]
unsafe fn failure<const N: usize>(fields: *mut Fields<N>, index: u16, function: &'static str, code: i32) -> Error {
    // SAFETY: the caller's contract; the reference does not outlive this function.
    let f = unsafe { &*fields };
    if f.status & REFUSED != 0 {
        Error::WorkspaceExhausted { requested: f.requested, available: f.available }
    } else if f.status & BAD_FREE != 0 {
        Error::BadWorkspaceFree
    } else if code == 0 {
        Error::OperatorFailed { index, function, code, message: Message::new("workspace not freed in LIFO order") }
    } else {
        let message = Message::from_c_bytes(&f.message[..f.message_len.min(Message::CAPACITY)]);
        Error::OperatorFailed { index, function, code, message }
    }
}

impl<const N: usize> Drop for Installed<N> {
    /// Empties the window: the C finds no workspace between runs.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: exclusive use until now (`install`'s contract).
        unsafe {
            (*self.fields).top = core::ptr::null_mut();
            (*self.fields).limit = core::ptr::null_mut();
            (*self.fields).depth = 0;
        }
    }
}

impl<const N: usize> RunWorkspace for Installed<N> {
    #[inline]
    fn set_window(&mut self, offset: usize, len: usize) {
        Installed::set_window(self, offset, len);
    }

    #[inline]
    fn end_call(&self, index: u16, function: &'static str, rc: i32) -> Result<(), Error> {
        Installed::end_call(self, index, function, rc)
    }

    #[inline]
    fn high_water(&self) -> usize {
        Installed::high_water(self)
    }
}

impl<const M: usize> Run<Installed<M>> {
    /// Starts a run over `arena` whose C allocates its workspace inline from `workspace`, the
    /// model's own (never fails: nothing is shared with another model).
    ///
    /// # Safety
    /// As for [`Run::enter`], and `workspace` is the model's (the one its C was compiled
    /// against), used by nothing else until the `Run` is dropped.
    #[inline]
    pub unsafe fn enter_inline<const N: usize>(
        arena: &'static StaticArena<N>,
        workspace: &'static ModelWorkspace<M>,
    ) -> Result<Self, Error> {
        let base = arena.as_mut_ptr();
        // SAFETY: the caller's contract: exclusive use of the arena and the workspace.
        let ws = unsafe { workspace.install(base, N) };
        Ok(Run::new(ws, base, N))
    }

    /// [`Run::enter_inline`] with a second region for external parameters (see
    /// [`Run::enter_with_params`]).
    ///
    /// # Safety
    /// As for [`Run::enter_inline`], for both regions.
    #[inline]
    pub unsafe fn enter_inline_with_params<const N: usize, const P: usize>(
        arena: &'static StaticArena<N>,
        params: &'static StaticArena<P>,
        workspace: &'static ModelWorkspace<M>,
    ) -> Result<Self, Error> {
        // SAFETY: forwarded from the caller.
        let mut r = unsafe { Self::enter_inline(arena, workspace)? };
        r.set_params(params);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the model's C does to the fields (its allocator is C, tested by mlf-build with the
    /// header the build step writes): here written directly.
    fn c_sets(ws: &'static ModelWorkspace<2>, f: impl FnOnce(&mut Fields<2>)) {
        // SAFETY: the test's own workspace, no handle reading it at this moment.
        f(unsafe { &mut *ws.0.get() });
    }

    /// The window as offsets from the arena (`None` when empty at no address), and `depth`.
    fn fields(ws: &'static ModelWorkspace<2>, arena: *mut u8) -> (Option<(usize, usize)>, usize) {
        // SAFETY: as in `c_sets`.
        let f = unsafe { &*ws.0.get() };
        let at = |p: *mut u8| (p as usize).wrapping_sub(arena as usize);
        ((!f.top.is_null()).then(|| (at(f.top), at(f.limit))), f.depth)
    }

    #[test]
    fn a_run_gets_its_window_and_a_clean_call_is_ok() {
        static WS: ModelWorkspace<2> = ModelWorkspace::new();
        static ARENA: StaticArena<64> = StaticArena::new();
        // SAFETY: the test's own statics.
        let mut r = unsafe { Run::enter_inline(&ARENA, &WS).unwrap() };
        r.workspace(16, 100);
        assert_eq!(fields(&WS, ARENA.as_mut_ptr()), (Some((16, 64)), 0), "clamped to the arena");
        c_sets(&WS, |f| f.high = f.base.wrapping_add(48));
        assert_eq!(r.check(0, "f", 0), Ok(()));
        assert_eq!(r.finish(), 48);
        assert_eq!(fields(&WS, ARENA.as_mut_ptr()), (None, 0), "between runs the window is empty");
    }

    #[test]
    fn what_the_c_recorded_becomes_the_runs_error() {
        static WS: ModelWorkspace<2> = ModelWorkspace::new();
        static ARENA: StaticArena<64> = StaticArena::new();
        // SAFETY: the test's own statics, one run at a time.
        let run = || unsafe { Run::enter_inline(&ARENA, &WS).unwrap() };
        let mut r = run();
        c_sets(&WS, |f| (f.status, f.requested, f.available) = (REFUSED, 80, 64));
        assert_eq!(r.check(3, "f", -1), Err(Error::WorkspaceExhausted { requested: 80, available: 64 }));
        drop(r);
        let mut r = run();
        assert_eq!(r.check(0, "f", 0), Ok(()), "a new run starts clean");
        c_sets(&WS, |f| f.status = BAD_FREE);
        assert_eq!(r.check(0, "f", 0), Err(Error::BadWorkspaceFree));
        drop(r);
        let mut r = run();
        c_sets(&WS, |f| f.depth = 1);
        assert!(matches!(r.check(0, "f", 0), Err(Error::OperatorFailed { code: 0, .. })), "not freed");
        drop(r);
        let mut r = run();
        c_sets(&WS, |f| {
            f.message[..7].copy_from_slice(b"no room");
            f.message_len = 7;
        });
        let Err(Error::OperatorFailed { index: 2, function: "k", code: -1, message }) = r.check(2, "k", -1) else {
            panic!("a failed call")
        };
        assert_eq!(message.as_str(), "no room");
    }
}
