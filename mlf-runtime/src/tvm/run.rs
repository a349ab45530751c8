//! One run of a TVM model: the workspace session over the model's static arena, the caller's
//! input pointers stored into their descriptors, and the calls into generated C through the
//! tables the module built when it compiled ([`super::tables`]). Nothing is built per run.

use core::ffi::{c_int, c_void};

use super::ffi::{FfiFn, K_ARG_INT, K_FFI_NONE, K_OPAQUE_HANDLE, PackedFn, TVMFFIAny, TVMValue};
use super::tables::{Call, MAX_PACKED_ARGS, RunTensor, TYPE_CODES};
use super::workspace::{RunWorkspace, Session};
use crate::cell::StaticArena;
use crate::element::Element;
use crate::error::{Error, Message};
use crate::params::{ParamRef, ParamSource};

/// A model run: the arena installed for `TVMBackendAllocWorkspace` (and the parameter region,
/// for external parameters) until it is dropped. `W` serves the workspace: the thread's
/// [`Session`] (the Rust `TVMBackendAllocWorkspace`), or an AOT model's own
/// [`ModelWorkspace`](super::ModelWorkspace), which its C allocates from inline.
pub struct Run<W = Session<'static>> {
    ws: W,
    base: *mut u8,
    len: usize,
    params: *mut u8,
    params_len: usize,
}

/// Calls a tvm-ffi kernel (a Relax export's) with `args`: what the packed-signature wrapper of
/// a Relax call in a generated module does.
///
/// # Safety
/// `f` is a generated kernel taking `args`, whose tensors point at descriptors in statics, live
/// for the run.
#[inline]
pub unsafe fn call_ffi(f: FfiFn, args: &[TVMFFIAny]) -> c_int {
    let mut result = TVMFFIAny::int(0);
    result.type_index = K_FFI_NONE;
    // SAFETY: the caller's contract: the kernel reads `args` and writes at most `result`.
    unsafe { f(core::ptr::null_mut(), args.as_ptr(), args.len() as i32, &mut result) }
}

impl Run {
    /// Starts a run over `arena`; workspace allocations are aligned to `align`.
    /// Fails with [`Error::Busy`] when another model is running.
    ///
    /// # Safety
    /// Until the `Run` is dropped the caller has exclusive use of `arena` and of every static
    /// it passes to this run's methods (descriptors, the parameter region): the generated
    /// `Model` holds its module's take-once state, which owns them.
    pub unsafe fn enter<const N: usize>(arena: &'static StaticArena<N>, align: usize) -> Result<Run, Error> {
        let base = arena.as_mut_ptr();
        Ok(Run::new(Session::enter_raw(base, N, align)?, base, N))
    }

    /// Starts a run with a second region for external parameters: loaded before the run
    /// (resident placement), filled call by call (streamed, see [`Run::calls_streamed`]) or as
    /// calls first need its files (lazy, see [`Run::calls_lazy`]).
    ///
    /// # Safety
    /// As for [`Run::enter`], for both regions.
    pub unsafe fn enter_with_params<const N: usize, const P: usize>(
        arena: &'static StaticArena<N>,
        params: &'static StaticArena<P>,
        align: usize,
    ) -> Result<Run, Error> {
        // SAFETY: forwarded from the caller.
        let mut r = unsafe { Self::enter(arena, align)? };
        r.set_params(params);
        Ok(r)
    }
}

impl<S: RunWorkspace> Run<S> {
    /// A run over the `len` bytes at `base` (the arena `ws` serves), without parameters.
    #[inline]
    pub(super) fn new(ws: S, base: *mut u8, len: usize) -> Self {
        Run { ws, base, len, params: core::ptr::null_mut(), params_len: 0 }
    }

    /// Gives the run its parameter region.
    #[inline]
    pub(super) fn set_params<const P: usize>(&mut self, params: &'static StaticArena<P>) {
        self.params = params.as_mut_ptr();
        self.params_len = P;
    }

    /// Points input descriptor `t` at the caller's buffer (read, never written, by the
    /// kernels) for this run's calls.
    #[inline]
    pub fn input<T: Element>(&mut self, t: &'static RunTensor, data: &[T]) {
        // SAFETY: `enter`'s contract gives this run exclusive use of the model's descriptors,
        // and no call is running (`&mut self`).
        unsafe { (*t.ptr()).data = data_ptr(data) };
    }

    /// Reads parameter `p` from `source` into the parameter region at `offset` (checking size and
    /// hash), for the next call (streamed placement).
    pub fn stage(&mut self, source: &mut dyn ParamSource, p: &ParamRef, offset: usize) -> Result<(), Error> {
        assert!(offset.checked_add(p.bytes).is_some_and(|end| end <= self.params_len), "parameter outside its region");
        // SAFETY: the range is inside the parameter region this run uses exclusively (checked
        // above, `enter_with_params`' contract); no call is running, so no C code reads it.
        let buf = unsafe { core::slice::from_raw_parts_mut(self.params.add(offset), p.bytes) };
        source.load(p, buf)?;
        Ok(())
    }

    /// Copies a caller's input (or an embedded parameter) into the arena at `offset` (when the
    /// model writes into its storage, or an output is one of them).
    pub fn copy_in<T: Element>(&mut self, offset: usize, data: &[T]) {
        let bytes = core::mem::size_of_val(data);
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "copy outside the arena");
        // SAFETY: the destination range is inside the arena (checked above), the source is a
        // valid slice, and they cannot overlap (the arena is this run's alone).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), self.base.add(offset), bytes) };
    }

    /// Copies `bytes` bytes at `from` in the parameter region to `offset` in the arena (an
    /// output that is a resident parameter).
    pub fn copy_param(&mut self, from: usize, offset: usize, bytes: usize) {
        assert!(from.checked_add(bytes).is_some_and(|end| end <= self.params_len), "copy outside the parameters");
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "copy outside the arena");
        // SAFETY: both ranges are inside this run's regions (checked above), which are distinct
        // statics.
        unsafe { core::ptr::copy_nonoverlapping(self.params.add(from), self.base.add(offset), bytes) };
    }

    /// Copies the data of descriptor `t` (a linked parameter) into the arena at `offset`.
    ///
    /// # Safety
    /// `t`'s data pointer is valid for the bytes its shape and dtype describe (set by
    /// [`Run::linked`]).
    pub unsafe fn copy_linked(&mut self, t: &'static RunTensor, offset: usize) {
        // SAFETY: no call is running; the descriptor is read, not written.
        let d = unsafe { *t.ptr() };
        let bytes = d.data_bytes().expect("a described tensor");
        assert!(!d.data.is_null(), "linked parameter not looked up");
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "copy outside the arena");
        // SAFETY: the source is valid for `bytes` (the caller's contract), the destination is
        // inside the arena (checked above), and C's read-only data cannot overlap it.
        unsafe { core::ptr::copy_nonoverlapping(d.data.cast::<u8>(), self.base.add(offset), bytes) };
    }

    /// Points the workspace at `[offset, offset + len)` of the arena (an AOT model's window;
    /// graph calls carry their own, see [`Call::scratch`]).
    #[inline]
    pub fn workspace(&mut self, offset: usize, len: usize) {
        self.ws.set_window(offset, len);
    }

    /// Calls every call of `calls` in order (their index in the slice is the call number in
    /// errors), each with its scratch window.
    ///
    /// # Safety
    /// Each call's function must be the model's generated packed function of that name, and
    /// its arguments descriptors of the tensors it was compiled for, whose data is valid (the
    /// code generator checks both against the model at build time; inputs are set by
    /// [`Run::input`] before).
    pub unsafe fn calls(&mut self, calls: &'static [&'static Call]) -> Result<(), Error> {
        for (i, c) in calls.iter().enumerate() {
            // SAFETY: forwarded from the caller.
            unsafe { self.call_at(i as u16, c)? };
        }
        Ok(())
    }

    /// [`Run::calls`] with streamed parameters: before each call, the parameter files it
    /// stages are read from `source` (files of `params`, checked) into the staging buffer.
    ///
    /// # Safety
    /// As for [`Run::calls`]; the staged descriptors point into the staging buffer.
    pub unsafe fn calls_streamed(
        &mut self,
        calls: &'static [&'static Call],
        source: &mut dyn ParamSource,
        params: &'static [ParamRef],
    ) -> Result<(), Error> {
        for (i, c) in calls.iter().enumerate() {
            for s in c.stage {
                self.stage(source, &params[s.file as usize], s.offset)?;
            }
            // SAFETY: forwarded from the caller.
            unsafe { self.call_at(i as u16, c)? };
        }
        Ok(())
    }

    /// Calls one packed function (an AOT model's packed entry) as call 0.
    ///
    /// # Safety
    /// As for [`Run::calls`].
    pub unsafe fn call(&mut self, c: &'static Call) -> Result<(), Error> {
        // SAFETY: forwarded from the caller.
        unsafe { self.call_at(0, c) }
    }

    /// The parameter region's start and bytes (constant arrays are bound into it).
    pub(super) fn param_region(&self) -> (*mut u8, usize) {
        (self.params, self.params_len)
    }

    /// Calls `c` as call `index`.
    ///
    /// # Safety
    /// As for [`Run::calls`].
    #[inline]
    pub(super) unsafe fn call_at(&mut self, index: u16, c: &Call) -> Result<(), Error> {
        #[cfg(feature = "profile")]
        crate::profile::before(u32::from(index), c.name, crate::profile::Unit::Cpu);
        self.ws.set_window(c.scratch.offset, c.scratch.len);
        debug_assert!(c.args.len() <= MAX_PACKED_ARGS);
        let mut ret = TVMValue { v_int64: 0 };
        let mut ret_code: c_int = 0;
        // SAFETY: per the caller's contract `c.f` is a generated kernel taking `c.args`; the
        // handles point at descriptors in statics whose data is live for the run; the C reads
        // the arguments and type codes and never writes them.
        let rc = unsafe {
            (c.f)(
                c.args.as_ptr().cast_mut(),
                TYPE_CODES.as_ptr().cast_mut(),
                c.args.len() as c_int,
                &mut ret,
                &mut ret_code,
                core::ptr::null_mut(),
            )
        };
        #[cfg(feature = "profile")]
        crate::profile::after(u32::from(index), c.name, crate::profile::Unit::Cpu);
        self.ws.end_call(index, c.name, rc)
    }

    /// Checks what a direct call of `function` (call `index`: an AOT entry called with
    /// pointers) returned.
    #[inline]
    pub fn check(&mut self, index: u16, function: &'static str, rc: i32) -> Result<(), Error> {
        self.ws.end_call(index, function, rc)
    }

    /// Points each descriptor of `table` at the storage `_lookup_linked_param` returns for its
    /// storage id (TVM 0.8 linked parameters, which live in the C's read-only data). One call
    /// over a static table, so the generated `run()` keeps one small frame however many
    /// parameters the model links.
    ///
    /// # Safety
    /// `lookup` must be the model's generated `_lookup_linked_param`, and the parameter it
    /// returns for each storage id must hold what its descriptor describes.
    pub unsafe fn linked(&mut self, table: &[(&'static RunTensor, i64)], lookup: PackedFn) -> Result<(), Error> {
        for (index, &(t, sid)) in table.iter().enumerate() {
            let mut arg = TVMValue { v_int64: sid };
            let mut code = K_ARG_INT;
            let mut ret = TVMValue { v_int64: 0 };
            let mut ret_code: c_int = 0;
            // SAFETY: `lookup` is the generated switch over storage ids; it reads
            // `args[0].v_int64` and writes one value and type code.
            let rc = unsafe { lookup(&mut arg, &mut code, 1, &mut ret, &mut ret_code, core::ptr::null_mut()) };
            // SAFETY: reading the union as a handle is what the callee wrote for code 3.
            let handle = unsafe { ret.v_handle };
            if rc != 0 || ret_code != K_OPAQUE_HANDLE || handle.is_null() {
                return Err(Error::OperatorFailed {
                    index: u16::try_from(index).unwrap_or(u16::MAX),
                    function: "_lookup_linked_param",
                    code: rc,
                    message: Message::new("no linked parameter for this storage id"),
                });
            }
            // SAFETY: exclusive use of the descriptor (`enter`'s contract); no call is running.
            unsafe { (*t.ptr()).data = handle };
        }
        Ok(())
    }

    /// Ends the run and returns the highest arena offset the workspace reached.
    #[inline]
    pub fn finish(self) -> usize {
        self.ws.high_water()
    }
}

/// A caller's buffer as the `void*` generated C takes (read, never written, by the kernels).
#[inline]
pub fn data_ptr<T: Element>(data: &[T]) -> *mut c_void {
    data.as_ptr().cast_mut().cast()
}

#[cfg(test)]
pub(super) mod tests {
    extern crate std;

    use super::*;
    use crate::tvm::backend::{TVMBackendAllocWorkspace, TVMBackendFreeWorkspace};
    use crate::tvm::ffi::{DLDataType, DLTensor};
    use crate::tvm::{Scratch, Stage, Tensor};

    /// Runs one at a time (without `std` the runtime allows one run per program).
    pub(crate) static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    const F32: DLDataType = DLDataType::new(2, 32);
    static SHAPE_4: [i64; 1] = [4];

    /// The data of `args[i]`, a `DLTensor` of four floats (checked as far as C could).
    ///
    /// # Safety
    /// `args` holds at least `i + 1` handles to descriptors of four floats.
    unsafe fn floats(args: *mut TVMValue, i: usize) -> *mut [f32; 4] {
        // SAFETY: per the contract.
        unsafe {
            let t = &*(*args.add(i)).v_handle.cast::<DLTensor>();
            assert_eq!((t.ndim, *t.shape, t.dtype), (1, 4, F32));
            t.data.cast::<[f32; 4]>()
        }
    }

    /// A stand-in for a TVM kernel: `out = a + b` through 48 bytes of workspace, checking its
    /// arguments as generated C would read them.
    unsafe extern "C" fn add(
        args: *mut TVMValue,
        codes: *mut c_int,
        n: c_int,
        _ret: *mut TVMValue,
        _ret_code: *mut c_int,
        _resource: *mut c_void,
    ) -> i32 {
        assert_eq!(n, 3);
        // SAFETY: the run passes three handles to four-float descriptors and 64 type codes.
        unsafe {
            assert!((0..3).all(|i| *codes.add(i) == 7));
            let ws = TVMBackendAllocWorkspace(1, 0, 48, 2, 32).cast::<f32>();
            if ws.is_null() {
                return -1;
            }
            let (a, b) = (*floats(args, 0), *floats(args, 1));
            for k in 0..4 {
                *ws.add(k) = a[k] + b[k];
            }
            let out = floats(args, 2);
            for k in 0..4 {
                (*out)[k] = *ws.add(k);
            }
            TVMBackendFreeWorkspace(1, 0, ws.cast())
        }
    }

    /// A kernel that fails.
    unsafe extern "C" fn fails(
        _: *mut TVMValue,
        _: *mut c_int,
        _: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        -1
    }

    /// A kernel that keeps its workspace.
    unsafe extern "C" fn leaks(
        _: *mut TVMValue,
        _: *mut c_int,
        _: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        if TVMBackendAllocWorkspace(1, 0, 16, 2, 32).is_null() { -1 } else { 0 }
    }

    /// A two-operator model as a generated module lays it out: the caller's input, a constant
    /// in flash, an intermediate and an output in the arena, each call's scratch window.
    static ARENA: StaticArena<128> = StaticArena::new();
    static INPUT: RunTensor = RunTensor::new();
    static WEIGHTS: [f32; 4] = [0.5, 1.5, 2.5, 3.5];
    static CONSTANT: Tensor = Tensor::new(WEIGHTS.as_ptr().cast_mut().cast(), &SHAPE_4, F32);
    static MIDDLE: Tensor = Tensor::new(ARENA.at(0), &SHAPE_4, F32);
    static OUTPUT: Tensor = Tensor::new(ARENA.at(16), &SHAPE_4, F32);
    static CALL_0: Call =
        Call::new("add_0", add, &[INPUT.handle(), CONSTANT.handle(), MIDDLE.handle()], Scratch { offset: 32, len: 48 });
    static CALL_1: Call = Call::new(
        "add_1",
        add,
        &[MIDDLE.handle(), CONSTANT.handle(), OUTPUT.handle()],
        Scratch { offset: 64, len: 64 },
    );
    static CALLS: [&Call; 2] = [&CALL_0, &CALL_1];

    fn run_model(input: &[f32; 4], calls: &'static [&'static Call]) -> Result<([f32; 4], usize), Error> {
        // SAFETY: ONE_RUN (held by every test) makes this the only user of the statics.
        let mut r = unsafe { Run::enter(&ARENA, 16)? };
        r.input(&INPUT, &input[..]);
        // SAFETY: the calls' functions take the descriptors they are given.
        unsafe { r.calls(calls)? };
        let high_water = r.finish();
        // SAFETY: the run is over; nothing writes the arena while the copy is made.
        let out = *unsafe { ARENA.view::<f32, 4>(16) };
        Ok((out, high_water))
    }

    fn describe_input() {
        // SAFETY: no run is in progress (ONE_RUN is held).
        unsafe { INPUT.describe(&SHAPE_4, F32) };
    }

    #[test]
    fn calls_read_static_tables_and_write_the_arena() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        let (out, high_water) = run_model(&[1.0, 2.0, 3.0, 4.0], &CALLS).unwrap();
        assert_eq!(out, [2.0, 5.0, 8.0, 11.0]);
        assert_eq!(high_water, 64 + 48, "the second call's window starts at 64");
        // A second run with another input sees only its own input.
        let (out, _) = run_model(&[0.0; 4], &CALLS).unwrap();
        assert_eq!(out, [1.0, 3.0, 5.0, 7.0]);
    }

    #[cfg(feature = "profile")]
    #[test]
    fn the_profile_hook_sees_every_call_in_order() {
        use crate::profile::{Edge, Event, Unit, clear_hook, set_hook};
        use std::vec::Vec;
        static SEEN: std::sync::Mutex<Vec<Event>> = std::sync::Mutex::new(Vec::new());
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        set_hook(|e| SEEN.lock().unwrap().push(*e));
        let out = run_model(&[1.0, 2.0, 3.0, 4.0], &CALLS);
        clear_hook();
        assert_eq!(out.unwrap().0, [2.0, 5.0, 8.0, 11.0]);
        let seen: Vec<(Edge, u32, &str)> = SEEN.lock().unwrap().iter().map(|e| (e.edge, e.index, e.name)).collect();
        let names: Vec<&str> = CALLS.iter().map(|c| c.name).collect();
        let want: Vec<(Edge, u32, &str)> = names
            .iter()
            .enumerate()
            .flat_map(|(i, n)| [(Edge::Before, i as u32, *n), (Edge::After, i as u32, *n)])
            .collect();
        assert_eq!(seen, want);
        assert!(SEEN.lock().unwrap().iter().all(|e| e.unit == Unit::Cpu));
    }

    static SMALL_CALL: Call = Call::new(
        "add_small",
        add,
        &[INPUT.handle(), CONSTANT.handle(), MIDDLE.handle()],
        Scratch { offset: 32, len: 32 },
    );
    static SMALL: [&Call; 1] = [&SMALL_CALL];
    static BROKEN: Call = Call::new("broken", fails, &[], Scratch::NONE);
    static FAILING: [&Call; 2] = [&CALL_0, &BROKEN];
    static LEAKY: Call = Call::new("leaky", leaks, &[], Scratch { offset: 32, len: 32 });
    static LEAKING: [&Call; 1] = [&LEAKY];

    #[test]
    fn failures_name_the_call() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        let e = run_model(&[0.0; 4], &SMALL).unwrap_err();
        assert_eq!(e, Error::WorkspaceExhausted { requested: 48, available: 32 });
        match run_model(&[0.0; 4], &FAILING).unwrap_err() {
            Error::OperatorFailed { index, function, code, .. } => {
                assert_eq!((index, function, code), (1, "broken", -1))
            }
            e => panic!("{e:?}"),
        }
        match run_model(&[0.0; 4], &LEAKING).unwrap_err() {
            Error::OperatorFailed { function, message, .. } => {
                assert_eq!(function, "leaky");
                assert!(message.as_str().contains("LIFO"), "{message}");
            }
            e => panic!("{e:?}"),
        }
        // The model runs again after every failure.
        assert_eq!(run_model(&[0.0; 4], &CALLS).unwrap().0, [1.0, 3.0, 5.0, 7.0]);
    }

    #[test]
    fn between_runs_the_c_gets_no_workspace() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        // A run that ends with an allocation still live (the kernel leaks it) leaves nothing.
        assert!(run_model(&[0.0; 4], &LEAKING).is_err());
        for nbytes in [0, 16] {
            assert!(TVMBackendAllocWorkspace(1, 0, nbytes, 2, 32).is_null(), "{nbytes} bytes");
        }
        assert_eq!(TVMBackendFreeWorkspace(1, 0, ARENA.at(32)), -1);
        assert_eq!(run_model(&[0.0; 4], &CALLS).unwrap().0, [1.0, 3.0, 5.0, 7.0]);
    }

    #[cfg(not(feature = "std"))]
    #[test]
    fn a_second_run_is_busy() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: ONE_RUN is held; the second enter fails before touching anything.
        let r = unsafe { Run::enter(&ARENA, 16) }.unwrap();
        assert_eq!(unsafe { Run::enter(&ARENA, 16) }.err(), Some(Error::Busy));
        drop(r);
    }

    #[test]
    fn copies_stay_inside_their_regions() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        static PARAMS: StaticArena<16> = StaticArena::new();
        // SAFETY: ONE_RUN is held.
        let mut r = unsafe { Run::enter_with_params(&ARENA, &PARAMS, 16) }.unwrap();
        r.copy_in(120, &[7u8; 8][..]);
        r.copy_param(8, 0, 8);
        let copy_past_the_end =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.copy_in(121, &[7u8; 8][..])));
        assert!(copy_past_the_end.is_err());
        drop(r);
        // SAFETY: the run is over.
        assert_eq!(unsafe { ARENA.view::<u8, 8>(120) }, &[7; 8]);
    }

    /// A `ParamSource` holding four floats under the identifier `w`.
    struct Source(u32);

    impl ParamSource for Source {
        fn path_of(&self, _: &ParamRef) -> Message {
            Message::new("test")
        }

        fn read(&mut self, p: &ParamRef, out: &mut [u8]) -> Result<(), crate::params::ParamError> {
            self.load(p, out)
        }

        /// Fills the buffer without a hash check (the test's reference has no hash).
        fn load(&mut self, p: &ParamRef, out: &mut [u8]) -> Result<(), crate::params::ParamError> {
            self.0 += 1;
            assert_eq!((p.id, out.len()), ("w", 16));
            for (k, c) in out.chunks_exact_mut(4).enumerate() {
                c.copy_from_slice(&(k as f32 + 10.0).to_le_bytes());
            }
            Ok(())
        }
    }

    static STAGING: StaticArena<16> = StaticArena::new();
    static STAGED: Tensor = Tensor::new(STAGING.at(0), &SHAPE_4, F32);
    static PARAM_FILES: [ParamRef; 1] = [ParamRef { id: "w", bytes: 16, xxh64: 0 }];
    static STREAMED_0: Call =
        Call::new("add_0", add, &[INPUT.handle(), STAGED.handle(), MIDDLE.handle()], Scratch { offset: 32, len: 48 })
            .staging(&[Stage { file: 0, offset: 0 }]);
    static STREAMED_1: Call =
        Call::new("add_1", add, &[MIDDLE.handle(), STAGED.handle(), OUTPUT.handle()], Scratch { offset: 64, len: 64 });
    static STREAMED: [&Call; 2] = [&STREAMED_0, &STREAMED_1];

    #[test]
    fn streamed_parameters_are_staged_before_their_call() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        let mut source = Source(0);
        // SAFETY: ONE_RUN is held.
        let mut r = unsafe { Run::enter_with_params(&ARENA, &STAGING, 16) }.unwrap();
        r.input(&INPUT, &[1.0f32; 4][..]);
        // SAFETY: the calls take the descriptors they are given.
        unsafe { r.calls_streamed(&STREAMED, &mut source, &PARAM_FILES) }.unwrap();
        drop(r);
        assert_eq!(source.0, 1);
        // SAFETY: the run is over.
        assert_eq!(unsafe { ARENA.view::<f32, 4>(16) }, &[21.0, 23.0, 25.0, 27.0]);
    }

    /// `_lookup_linked_param` of a model whose storage id 3 is four floats in its C.
    unsafe extern "C" fn lookup(
        args: *mut TVMValue,
        _: *mut c_int,
        _: c_int,
        ret: *mut TVMValue,
        ret_code: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        static LINKED: [f32; 4] = [100.0, 200.0, 300.0, 400.0];
        // SAFETY: one integer argument, one value and code to write.
        unsafe {
            if (*args).v_int64 != 3 {
                *ret_code = crate::tvm::ffi::K_NULLPTR;
                return 0;
            }
            (*ret).v_handle = LINKED.as_ptr().cast_mut().cast();
            *ret_code = K_OPAQUE_HANDLE;
        }
        0
    }

    static LINKED_PARAM: RunTensor = RunTensor::new();
    static LINKED_CALL: Call = Call::new(
        "add_linked",
        add,
        &[INPUT.handle(), LINKED_PARAM.handle(), OUTPUT.handle()],
        Scratch { offset: 32, len: 48 },
    );
    static WITH_LINKED: [&Call; 1] = [&LINKED_CALL];

    #[test]
    fn linked_parameters_are_looked_up_in_the_c() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        describe_input();
        // SAFETY: no run is in progress.
        unsafe { LINKED_PARAM.describe(&SHAPE_4, F32) };
        // SAFETY: ONE_RUN is held; `lookup` is a lookup function.
        let mut r = unsafe { Run::enter(&ARENA, 16) }.unwrap();
        assert!(unsafe { r.linked(&[(&LINKED_PARAM, 4)], lookup) }.is_err());
        unsafe { r.linked(&[(&LINKED_PARAM, 3)], lookup) }.unwrap();
        r.input(&INPUT, &[1.0f32; 4][..]);
        // SAFETY: the call takes the descriptors it is given.
        unsafe { r.calls(&WITH_LINKED) }.unwrap();
        // SAFETY: the linked descriptor points at four floats.
        unsafe { r.copy_linked(&LINKED_PARAM, 48) };
        drop(r);
        // SAFETY: the run is over.
        assert_eq!(unsafe { ARENA.view::<f32, 4>(16) }, &[101.0, 201.0, 301.0, 401.0]);
        assert_eq!(unsafe { ARENA.view::<f32, 4>(48) }, &[100.0, 200.0, 300.0, 400.0]);
    }
}
