//! Constant arrays taken out of a model's C (external parameters of models whose constants
//! were per-operator `static const` arrays): the C reads each through an entry of a table of
//! pointers it defines ([`ArrayTable`]); the generated module points the entries at the loaded
//! parameters once (resident), at the staging buffer before each call that reads them
//! (streamed: [`Run::calls_with_arrays`] for graph models, whose calls Rust makes; for AOT
//! models, whose main is C, the main calls a hook before each such call, which reaches the
//! run's `ParamSource` through a [`Streaming`] cell set only while `run()` is in the C), or at
//! their place in the parameter region, read the first time a call needs them (lazy: the same
//! two ways, reading each file once, see [`StreamGuard::loading_once`]).

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;

use super::run::Run;
use super::tables::{Call, Stage};
use super::workspace::RunWorkspace;
use crate::cell::StaticArena;
use crate::error::Error;
use crate::params::{Bits, Loaded, ParamRef, ParamSource};

/// The table of `K` pointers a model's rewritten C reads its constant arrays through
/// (`mlf_param_table`, defined by that C in `.bss`; declared by the generated module).
#[repr(transparent)]
pub struct ArrayTable<const K: usize>(UnsafeCell<[*const c_void; K]>);

// SAFETY: written only through the `unsafe` methods below, whose callers hold the model's
// take-once state (which owns the table), and read by the model's C during that model's run.
unsafe impl<const K: usize> Sync for ArrayTable<K> {}

/// Table entry `slot` pointed at `offset` of the parameter region or staging buffer, where a
/// file of `bytes` bytes lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bind {
    /// The entry.
    pub slot: u16,
    /// Offset of the array's bytes in the region.
    pub offset: usize,
    /// The array's bytes.
    pub bytes: usize,
}

/// What one call needs before it runs: the files read into the staging buffer and the table
/// entries pointed at them (streamed placement), or the files read to their places in the
/// parameter region unless loaded already and the entries pointed there (lazy).
pub struct Step {
    /// Files read into the staging buffer or parameter region (indices into the module's
    /// `PARAMS`).
    pub stage: &'static [Stage],
    /// Entries pointed into the staging buffer or parameter region.
    pub bind: &'static [Bind],
}

impl<const K: usize> ArrayTable<K> {
    /// A table of null pointers (as the C's `.bss` holds it before binding).
    pub const fn new() -> Self {
        ArrayTable(UnsafeCell::new([core::ptr::null(); K]))
    }

    /// Points every entry of `binds` into `region` (resident parameters, once loaded).
    ///
    /// # Safety
    /// No call into the model's C is running and nothing else uses the table: the caller holds
    /// the model's take-once state, which owns the table and the region.
    pub unsafe fn bind<const P: usize>(&self, region: &'static StaticArena<P>, binds: &[Bind]) {
        // SAFETY: forwarded; the region is `P` bytes.
        unsafe { self.bind_raw(region.as_mut_ptr(), P, binds) }
    }

    /// The entry `slot` (for tests and tools).
    pub fn get(&self, slot: usize) -> *const c_void {
        // SAFETY: a plain read of a pointer-sized value; writers hold `&mut`-like exclusivity
        // per the binding methods' contracts, which also exclude concurrent readers here.
        unsafe { (*self.0.get())[slot] }
    }

    /// Points every entry of `binds` at `base + offset`, checking each array lies inside the
    /// `len` bytes at `base` and each entry inside the table.
    ///
    /// # Safety
    /// As for [`ArrayTable::bind`]; `base` is valid for `len` bytes.
    unsafe fn bind_raw(&self, base: *mut u8, len: usize, binds: &[Bind]) {
        for b in binds {
            assert!(b.offset.checked_add(b.bytes).is_some_and(|end| end <= len), "array outside its region");
            let slot = usize::from(b.slot);
            assert!(slot < K, "array table entry out of range");
            // SAFETY: exclusive use of the table (the caller's contract); the offset is inside
            // the region (checked above).
            unsafe { (*self.0.get())[slot] = base.add(b.offset).cast_const().cast() };
        }
    }
}

impl<const K: usize> Default for ArrayTable<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: RunWorkspace> Run<S> {
    /// [`Run::calls_streamed`] for a model whose C reads constant arrays through `table`: before
    /// call `i`, its parameter files and then the arrays of `steps[i]` are read into the staging
    /// buffer and the entries of its arrays pointed at them.
    ///
    /// # Safety
    /// As for [`Run::calls`]; `table` is the model's own table and `steps` place every array
    /// a call reads.
    pub unsafe fn calls_with_arrays<const K: usize>(
        &mut self,
        calls: &'static [&'static Call],
        source: &mut dyn ParamSource,
        params: &'static [ParamRef],
        steps: &'static [Step],
        table: &'static ArrayTable<K>,
    ) -> Result<(), Error> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.calls_reading(calls, Some((steps, table)), |r, s| r.stage(source, &params[s.file as usize], s.offset))
        }
    }

    /// Calls every call of `calls` in order; before call `i`, `read` is given each file the call
    /// stages and then each file of `steps[i]` (with `arrays`), and the entries of `steps[i]` are
    /// pointed into the parameter region (the staging buffer, or the lazily loaded region).
    ///
    /// # Safety
    /// As for [`Run::calls_with_arrays`]; `read` leaves every file it is given at its offset in
    /// the parameter region.
    pub(super) unsafe fn calls_reading<const K: usize>(
        &mut self,
        calls: &'static [&'static Call],
        arrays: Option<(&'static [Step], &'static ArrayTable<K>)>,
        mut read: impl FnMut(&mut Run<S>, Stage) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for (i, c) in calls.iter().enumerate() {
            let step = arrays.and_then(|(steps, table)| steps.get(i).map(|s| (s, table)));
            for &s in c.stage.iter().chain(step.map_or(&[][..], |(s, _)| s.stage)) {
                read(self, s)?;
            }
            if let Some((step, table)) = step {
                let (base, len) = self.param_region();
                // SAFETY: the run owns the table and the parameter region (`enter_with_params`'
                // contract); no call is running.
                unsafe { table.bind_raw(base, len, step.bind) };
            }
            // SAFETY: forwarded from the caller.
            unsafe { self.call_at(i as u16, c)? };
        }
        Ok(())
    }
}

/// The slot the model's C calls before each call that reads arrays (`mlf_param_stage`, a
/// function pointer the C defines; null outside a streamed run).
#[repr(transparent)]
pub struct StageHook(UnsafeCell<Option<HookFn>>);

/// The type of the stage hook: `int (*)(int step)`, 0 on success.
pub type HookFn = unsafe extern "C" fn(c_int) -> c_int;

// SAFETY: written only by `Streaming::begin` and the guard's drop, whose callers hold the model's
// take-once state; read by the model's C during that run.
unsafe impl Sync for StageHook {}

impl StageHook {
    /// An empty slot.
    pub const fn new() -> Self {
        StageHook(UnsafeCell::new(None))
    }
}

#[cfg(test)]
impl StageHook {
    /// The function in the slot (as the C reads it).
    pub(super) fn installed(&self) -> Option<HookFn> {
        // SAFETY: a plain read; the tests that write the slot hold `ONE_RUN`, as the reader does.
        unsafe { *self.0.get() }
    }
}

impl Default for StageHook {
    fn default() -> Self {
        Self::new()
    }
}

/// What the stage hook of a streamed (or lazy) AOT model reads while `run()` is in the C: the
/// run's `ParamSource`, the staging buffer (or parameter region), the table, which files are
/// loaded (lazy), and the first error a step met.
pub struct Streaming(UnsafeCell<Option<Active>>);

struct Active {
    source: *mut (dyn ParamSource + 'static),
    staging: *mut u8,
    staging_len: usize,
    table: unsafe fn(*const (), *mut u8, usize, &[Bind]),
    table_ptr: *const (),
    steps: &'static [Step],
    params: &'static [ParamRef],
    hook: &'static StageHook,
    /// Lazy placement: the model's record of loaded files (files it has are not read again).
    loaded: Option<*mut [u32]>,
    error: Option<Error>,
}

// SAFETY: set and cleared only by `begin` and the guard (whose callers hold the model's
// take-once state) and read by the hook during that run, on the running thread.
unsafe impl Sync for Streaming {}

/// The table behind a type-erased pointer (so [`Active`] is not generic).
///
/// # Safety
/// `table` points at an `ArrayTable<K>`; as for [`ArrayTable::bind_raw`].
unsafe fn bind_erased<const K: usize>(table: *const (), base: *mut u8, len: usize, binds: &[Bind]) {
    // SAFETY: per the contract.
    unsafe { (*table.cast::<ArrayTable<K>>()).bind_raw(base, len, binds) }
}

impl Streaming {
    /// An inactive cell.
    pub const fn new() -> Self {
        Streaming(UnsafeCell::new(None))
    }

    /// Makes `source`, `staging`, `table`, `steps` and `params` reachable by the stage hook
    /// (`hook.1`, installed into the C's slot `hook.0`) until the guard is ended or dropped.
    ///
    /// # Safety
    /// The caller holds the model's take-once state, which owns this cell, the hook slot, the
    /// staging buffer and the table, for as long as the guard lives; only the model's C calls
    /// `f`, and only while the guard lives.
    pub unsafe fn begin<'a, const P: usize, const K: usize>(
        &'static self,
        source: &'a mut dyn ParamSource,
        staging: &'static StaticArena<P>,
        table: &'static ArrayTable<K>,
        steps: &'static [Step],
        params: &'static [ParamRef],
        hook: (&'static StageHook, HookFn),
    ) -> StreamGuard<'a> {
        let (hook, f) = hook;
        let source: *mut (dyn ParamSource + 'a) = source;
        // SAFETY: only the lifetime bound of the trait object changes; the pointer is used only
        // while the guard (which borrows `source` for `'a`) lives, and cleared when it ends.
        let source: *mut (dyn ParamSource + 'static) = unsafe { core::mem::transmute(source) };
        let active = Active {
            source,
            staging: staging.as_mut_ptr(),
            staging_len: P,
            table: bind_erased::<K>,
            table_ptr: (table as *const ArrayTable<K>).cast(),
            steps,
            params,
            hook,
            loaded: None,
            error: None,
        };
        // SAFETY: exclusive use of the cell and the slot (the caller's contract); no C runs.
        unsafe {
            *self.0.get() = Some(active);
            *hook.0.get() = Some(f);
        }
        StreamGuard { cell: self, _source: PhantomData }
    }

    /// Stages step `step`: reads its files into the staging buffer and points its table entries
    /// at them. Returns 0, or -1 after recording the error (the guard's [`StreamGuard::end`]
    /// returns it).
    ///
    /// # Safety
    /// Called only by the model's C through the hook, while a guard of this cell lives.
    pub unsafe fn stage(&'static self, step: c_int) -> c_int {
        // SAFETY: the guard's owner is inside the C call that called us and touches neither
        // the cell nor the buffers until it returns.
        let Some(a) = (unsafe { &mut *self.0.get() }).as_mut() else { return -1 };
        match a.step(step) {
            Ok(()) => 0,
            Err(e) => {
                a.error.get_or_insert(e);
                -1
            }
        }
    }
}

impl Default for Streaming {
    fn default() -> Self {
        Self::new()
    }
}

impl Active {
    fn step(&mut self, step: c_int) -> Result<(), Error> {
        let step = usize::try_from(step).ok().and_then(|i| self.steps.get(i)).ok_or(Error::OperatorFailed {
            index: 0,
            function: "mlf_param_stage",
            code: step,
            message: crate::message::Message::new("no such staging step"),
        })?;
        let mut loaded = self.loaded.map(|b| {
            // SAFETY: the record is the run's, borrowed by the live guard (`loading_once`), and
            // nothing else uses it while the C runs.
            Bits(unsafe { &mut *b })
        });
        for s in step.stage {
            let (f, p) = (s.file as usize, &self.params[s.file as usize]);
            if loaded.as_ref().is_some_and(|l| l.has(f)) {
                continue;
            }
            assert!(s.offset.checked_add(p.bytes).is_some_and(|end| end <= self.staging_len), "staged outside");
            // SAFETY: inside the staging buffer (checked above), which the run owns; no kernel
            // is running (the main called the hook between calls).
            let buf = unsafe { core::slice::from_raw_parts_mut(self.staging.add(s.offset), p.bytes) };
            // SAFETY: `source` is the run's, borrowed by the live guard.
            unsafe { (*self.source).load(p, buf)? };
            if let Some(l) = loaded.as_mut() {
                l.set(f);
            }
        }
        // SAFETY: `table_ptr` is the `ArrayTable<K>` `table` was made for; the run owns it.
        unsafe { (self.table)(self.table_ptr, self.staging, self.staging_len, step.bind) };
        Ok(())
    }
}

/// Keeps a [`Streaming`] cell active; ending or dropping it empties the cell and the hook slot.
pub struct StreamGuard<'a> {
    cell: &'static Streaming,
    _source: PhantomData<&'a mut dyn ParamSource>,
}

impl<'a> StreamGuard<'a> {
    /// Lazy placement: the region given to [`Streaming::begin`] is the parameter region, each
    /// step's files are placed where they stay, and a file `loaded` has is not read again (one
    /// read is recorded there once checked; a failed read leaves its file unloaded).
    pub fn loading_once<const W: usize>(self, loaded: &'a mut Loaded<W>) -> StreamGuard<'a> {
        let bits: *mut [u32] = loaded.bits().0;
        // SAFETY: the guard's owner is not in the C (it holds the guard and calls this), so the
        // hook does not read the cell now; the record is borrowed for as long as the guard lives.
        if let Some(a) = unsafe { (*self.cell.0.get()).as_mut() } {
            a.loaded = Some(bits);
        }
        self
    }

    /// Ends the streaming: the first error a step met, if any.
    pub fn end(self) -> Result<(), Error> {
        // SAFETY: the C call is over; the guard's owner uses the cell exclusively.
        let error = unsafe { (*self.cell.0.get()).as_mut().and_then(|a| a.error.take()) };
        drop(self);
        error.map_or(Ok(()), Err)
    }
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `end`: no C runs, and the cell and slot are this run's.
        unsafe {
            if let Some(a) = (*self.cell.0.get()).take() {
                *a.hook.0.get() = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::message::Message;
    use crate::params::{ParamError, ParamErrorKind, xxh64};
    use crate::tvm::ffi::DLDataType;
    use crate::tvm::ffi::TVMValue;
    use crate::tvm::run::tests::ONE_RUN;
    use crate::tvm::{RunTensor, Scratch, Tensor};

    const F32: DLDataType = DLDataType::new(2, 32);
    static SHAPE_4: [i64; 1] = [4];

    /// What the C's table is for these tests (a Rust static of the same layout).
    static TABLE: ArrayTable<2> = ArrayTable::new();

    /// Files `a` (four 1.0) and `b` (four 10.0), with their hashes.
    fn files() -> &'static [ParamRef; 2] {
        static FILES: std::sync::OnceLock<[ParamRef; 2]> = std::sync::OnceLock::new();
        FILES.get_or_init(|| {
            let hash = |v: f32| xxh64(&[v.to_le_bytes(); 4].concat());
            [ParamRef { id: "a", bytes: 16, xxh64: hash(1.0) }, ParamRef { id: "b", bytes: 16, xxh64: hash(10.0) }]
        })
    }

    /// A source holding `a` and `b`, counting reads; `broken` gives every read a wrong byte.
    struct Source {
        reads: usize,
        broken: bool,
    }

    impl ParamSource for Source {
        fn path_of(&self, _: &ParamRef) -> Message {
            Message::new("memory")
        }

        fn read(&mut self, p: &ParamRef, out: &mut [u8]) -> Result<(), ParamError> {
            self.reads += 1;
            let v: f32 = if p.id == "a" { 1.0 } else { 10.0 };
            for c in out.chunks_exact_mut(4) {
                c.copy_from_slice(&v.to_le_bytes());
            }
            if self.broken {
                out[0] ^= 1;
            }
            Ok(())
        }
    }

    /// The four floats entry `slot` points at.
    ///
    /// # Safety
    /// The entry points at four floats.
    unsafe fn array(slot: usize) -> [f32; 4] {
        // SAFETY: per the contract.
        unsafe { *TABLE.get(slot).cast::<[f32; 4]>() }
    }

    #[test]
    fn resident_binding_points_entries_into_the_region() {
        static REGION: StaticArena<48> = StaticArena::new();
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let binds = [Bind { slot: 1, offset: 32, bytes: 16 }, Bind { slot: 0, offset: 0, bytes: 16 }];
        // SAFETY: ONE_RUN is held; no C runs.
        unsafe { TABLE.bind(&REGION, &binds) };
        assert_eq!(TABLE.get(0), REGION.at(0).cast_const());
        assert_eq!(TABLE.get(1), REGION.at(32).cast_const());
        let outside = [Bind { slot: 0, offset: 40, bytes: 16 }];
        // SAFETY: as above.
        let r = std::panic::catch_unwind(|| unsafe { TABLE.bind(&REGION, &outside) });
        assert!(r.is_err(), "an array past the region's end is refused");
    }

    /// A kernel as the rewritten C reads it: `out = in × array 0 + array 1` through the table.
    unsafe extern "C" fn add_arrays(
        args: *mut TVMValue,
        _: *mut c_int,
        n: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        assert_eq!(n, 2);
        // SAFETY: two handles to four-float descriptors; the table is bound before the call.
        unsafe {
            let input = *(*(*args).v_handle.cast::<crate::tvm::ffi::DLTensor>()).data.cast::<[f32; 4]>();
            let out = (*(*args.add(1)).v_handle.cast::<crate::tvm::ffi::DLTensor>()).data.cast::<[f32; 4]>();
            let (a, b) = (array(0), array(1));
            for k in 0..4 {
                (*out)[k] = input[k] * a[k] + b[k];
            }
        }
        0
    }

    static ARENA: StaticArena<64> = StaticArena::new();
    static STAGING: StaticArena<32> = StaticArena::new();
    static INPUT: RunTensor = RunTensor::new();
    static MIDDLE: Tensor = Tensor::new(ARENA.at(0), &SHAPE_4, F32);
    static OUTPUT: Tensor = Tensor::new(ARENA.at(16), &SHAPE_4, F32);
    static CALL_0: Call = Call::new("k0", add_arrays, &[INPUT.handle(), MIDDLE.handle()], Scratch::NONE);
    static CALL_1: Call = Call::new("k1", add_arrays, &[MIDDLE.handle(), OUTPUT.handle()], Scratch::NONE);
    static CALLS: [&Call; 2] = [&CALL_0, &CALL_1];

    /// Each call stages both files, the second in the other order.
    fn steps() -> &'static [Step; 2] {
        static STEPS: [Step; 2] = [
            Step {
                stage: &[Stage { file: 0, offset: 0 }, Stage { file: 1, offset: 16 }],
                bind: &[Bind { slot: 0, offset: 0, bytes: 16 }, Bind { slot: 1, offset: 16, bytes: 16 }],
            },
            Step {
                stage: &[Stage { file: 1, offset: 0 }, Stage { file: 0, offset: 16 }],
                bind: &[Bind { slot: 1, offset: 0, bytes: 16 }, Bind { slot: 0, offset: 16, bytes: 16 }],
            },
        ];
        &STEPS
    }

    #[test]
    fn graph_calls_stage_and_bind_their_arrays() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let params: &'static [ParamRef] = files();
        // SAFETY: ONE_RUN is held.
        unsafe { INPUT.describe(&SHAPE_4, F32) };
        let mut source = Source { reads: 0, broken: false };
        // SAFETY: ONE_RUN is held; the kernels take the descriptors they are given.
        let mut r = unsafe { Run::enter_with_params(&ARENA, &STAGING, 16) }.unwrap();
        r.input(&INPUT, &[0.5f32; 4][..]);
        unsafe { r.calls_with_arrays(&CALLS, &mut source, params, steps(), &TABLE) }.unwrap();
        drop(r);
        assert_eq!(source.reads, 4, "every call reads its own arrays");
        assert_eq!(unsafe { ARENA.view::<f32, 4>(16) }, &[20.5; 4]);
        assert_eq!(TABLE.get(1), STAGING.at(0).cast_const(), "the last call's binding stays");

        let mut broken = Source { reads: 0, broken: true };
        let mut r = unsafe { Run::enter_with_params(&ARENA, &STAGING, 16) }.unwrap();
        r.input(&INPUT, &[0.5f32; 4][..]);
        let e = unsafe { r.calls_with_arrays(&CALLS, &mut broken, params, steps(), &TABLE) }.unwrap_err();
        assert_eq!(e, Error::Param(ParamError::new(ParamErrorKind::HashMismatch, "a", "memory")));
    }

    static HOOK: StageHook = StageHook::new();
    static STREAM: Streaming = Streaming::new();

    unsafe extern "C" fn hook(step: c_int) -> c_int {
        // SAFETY: called by `main` below only while the test holds a guard.
        unsafe { STREAM.stage(step) }
    }

    /// An AOT main as the rewritten C reads it: the hook (when set) before each kernel.
    fn main(input: [f32; 4]) -> ([f32; 4], c_int) {
        // SAFETY: the slot is read like the C reads it, between the test's begin and end.
        let hook = unsafe { *HOOK.0.get() };
        let mut x = input;
        for step in 0..2 {
            if let Some(f) = hook {
                // SAFETY: the hook of this test.
                let rc = unsafe { f(step) };
                if rc != 0 {
                    return (x, rc);
                }
            }
            // SAFETY: bound by the step just staged.
            let (a, b) = unsafe { (array(0), array(1)) };
            x = core::array::from_fn(|k| x[k] * a[k] + b[k]);
        }
        (x, 0)
    }

    #[test]
    fn aot_hook_reaches_the_source_only_while_streaming() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let params: &'static [ParamRef] = files();
        let mut source = Source { reads: 0, broken: false };
        // SAFETY: ONE_RUN is held; `main` calls the hook only while the guard lives.
        let guard = unsafe { STREAM.begin(&mut source, &STAGING, &TABLE, steps(), params, (&HOOK, hook)) };
        let (out, rc) = main([0.5; 4]);
        guard.end().unwrap();
        assert_eq!((out, rc, source.reads), ([20.5; 4], 0, 4));
        // After the run the slot is empty and the cell refuses to stage.
        assert!(unsafe { *HOOK.0.get() }.is_none());
        assert_eq!(unsafe { STREAM.stage(0) }, -1);

        let mut broken = Source { reads: 0, broken: true };
        let guard = unsafe { STREAM.begin(&mut broken, &STAGING, &TABLE, steps(), params, (&HOOK, hook)) };
        let (_, rc) = main([0.5; 4]);
        assert_eq!(rc, -1);
        assert_eq!(guard.end(), Err(Error::Param(ParamError::new(ParamErrorKind::HashMismatch, "a", "memory"))));
        // An unknown step is an error, not a read outside `STEPS`.
        let mut source = Source { reads: 0, broken: false };
        let guard = unsafe { STREAM.begin(&mut source, &STAGING, &TABLE, steps(), params, (&HOOK, hook)) };
        assert_eq!(unsafe { STREAM.stage(7) }, -1);
        assert!(matches!(guard.end(), Err(Error::OperatorFailed { code: 7, .. })));
    }
}
