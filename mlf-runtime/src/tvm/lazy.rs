//! Lazily loaded parameters (lazy placement): the resident region's layout, nothing read before
//! the first run, and each parameter file read into its place the first time a call that uses it
//! runs. The model's [`Loaded`] set (in its take-once state) records what is in the region, so
//! later runs read nothing; a failed read leaves its file out of the set, to be read again by the
//! next run. Graph models load call by call ([`Run::calls_lazy`]); an AOT main in C loads through
//! its stage hook ([`StreamGuard::loading_once`](super::StreamGuard::loading_once)) or, for what
//! the main reads whole (a USMP constant pool), before it ([`Run::load_missing`]).

use super::arrays::{ArrayTable, Step};
use super::run::Run;
use super::tables::{Call, Stage};
use super::workspace::RunWorkspace;
use crate::error::Error;
use crate::params::{Bits, Loaded, ParamRef, ParamSource};

impl<S: RunWorkspace> Run<S> {
    /// Reads `params[s.file]` from `source` into the parameter region at `s.offset` (checking
    /// size and hash) unless `loaded` has it, and records it there once read. A failed read
    /// returns the error and leaves the file unloaded.
    pub fn load_once<const W: usize>(
        &mut self,
        source: &mut dyn ParamSource,
        params: &[ParamRef],
        s: Stage,
        loaded: &mut Loaded<W>,
    ) -> Result<(), Error> {
        self.load_bit(source, params, s, &mut loaded.bits())
    }

    /// [`Run::load_once`] over the words of a [`Loaded`].
    fn load_bit(
        &mut self,
        source: &mut dyn ParamSource,
        params: &[ParamRef],
        s: Stage,
        bits: &mut Bits<'_>,
    ) -> Result<(), Error> {
        let file = usize::from(s.file);
        if !bits.has(file) {
            self.stage(source, &params[file], s.offset)?;
            bits.set(file);
        }
        Ok(())
    }

    /// Reads every file of `params` that `loaded` does not have to its offset in `offsets` (the
    /// resident layout), for what an AOT main reads whole (a USMP constant pool, or constant
    /// arrays when the main has no stage hook). Stops at the first failed read.
    pub fn load_missing<const W: usize>(
        &mut self,
        source: &mut dyn ParamSource,
        params: &[ParamRef],
        offsets: &[usize],
        loaded: &mut Loaded<W>,
    ) -> Result<(), Error> {
        let mut bits = loaded.bits();
        for (k, &offset) in offsets.iter().enumerate() {
            let file = u16::try_from(k).expect("at most 65536 parameter files");
            self.load_bit(source, params, Stage { file, offset }, &mut bits)?;
        }
        Ok(())
    }

    /// [`Run::calls`] with lazily loaded parameters: before each call, the files it stages
    /// (at their offsets in the parameter region) that `loaded` does not have are read from
    /// `source` and recorded.
    ///
    /// # Safety
    /// As for [`Run::calls`]; the descriptors of parameters point at the offsets the calls stage
    /// them at in the parameter region.
    pub unsafe fn calls_lazy<const W: usize>(
        &mut self,
        calls: &'static [&'static Call],
        source: &mut dyn ParamSource,
        params: &'static [ParamRef],
        loaded: &mut Loaded<W>,
    ) -> Result<(), Error> {
        let mut bits = loaded.bits();
        // SAFETY: forwarded from the caller; `load_bit` leaves each file at its offset.
        unsafe { self.calls_reading::<0>(calls, None, |r, s| r.load_bit(source, params, s, &mut bits)) }
    }

    /// [`Run::calls_lazy`] for a model whose C reads constant arrays through `table`: before
    /// call `i`, the files of its parameters and of the arrays of `steps[i]` not loaded yet are
    /// read into their places, and the entries of its arrays pointed at them.
    ///
    /// # Safety
    /// As for [`Run::calls_lazy`]; `table` is the model's own table and `steps` place every
    /// array a call reads at its offset in the parameter region.
    pub unsafe fn calls_lazy_with_arrays<const K: usize, const W: usize>(
        &mut self,
        calls: &'static [&'static Call],
        source: &mut dyn ParamSource,
        params: &'static [ParamRef],
        steps: &'static [Step],
        table: &'static ArrayTable<K>,
        loaded: &mut Loaded<W>,
    ) -> Result<(), Error> {
        let mut bits = loaded.bits();
        // SAFETY: forwarded from the caller; `load_bit` leaves each file at its offset.
        unsafe { self.calls_reading(calls, Some((steps, table)), |r, s| r.load_bit(source, params, s, &mut bits)) }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use core::ffi::{c_int, c_void};
    use core::sync::atomic::{AtomicUsize, Ordering};
    use std::vec::Vec;

    use super::*;
    use crate::cell::StaticArena;
    use crate::message::Message;
    use crate::params::{ParamError, ParamErrorKind, xxh64};
    use crate::tvm::ffi::{DLDataType, DLTensor, TVMValue};
    use crate::tvm::run::tests::ONE_RUN;
    use crate::tvm::{Bind, RunTensor, Scratch, StageHook, Streaming, Tensor};

    const F32: DLDataType = DLDataType::new(2, 32);
    static SHAPE_4: [i64; 1] = [4];

    /// Operator calls made so far in the current run (each fake kernel counts itself).
    static CALLS_MADE: AtomicUsize = AtomicUsize::new(0);

    /// Every float of file `id`: `a` 1.0, `b` 10.0, `c` 100.0.
    fn value(id: &str) -> f32 {
        match id {
            "a" => 1.0,
            "b" => 10.0,
            _ => 100.0,
        }
    }

    /// Files `a`, `b` and `c`, four floats each, with their hashes.
    fn files() -> &'static [ParamRef; 3] {
        static FILES: std::sync::OnceLock<[ParamRef; 3]> = std::sync::OnceLock::new();
        FILES.get_or_init(|| {
            let file = |id| ParamRef { id, bytes: 16, xxh64: xxh64(&[value(id).to_le_bytes(); 4].concat()) };
            [file("a"), file("b"), file("c")]
        })
    }

    /// The resident layout of the three files.
    const AT_A: Stage = Stage { file: 0, offset: 0 };
    const AT_B: Stage = Stage { file: 1, offset: 16 };
    const AT_C: Stage = Stage { file: 2, offset: 32 };
    const OFFSETS: [usize; 3] = [0, 16, 32];

    /// A source recording each read (the file, and the calls made before it); every read of
    /// file `broken` gets a wrong byte.
    struct Source {
        reads: Vec<(&'static str, usize)>,
        broken: Option<&'static str>,
    }

    impl Source {
        fn new(broken: Option<&'static str>) -> Source {
            Source { reads: Vec::new(), broken }
        }

        /// The files read, in order.
        fn files(&self) -> Vec<&'static str> {
            self.reads.iter().map(|r| r.0).collect()
        }
    }

    impl ParamSource for Source {
        fn path_of(&self, _: &ParamRef) -> Message {
            Message::new("memory")
        }

        fn read(&mut self, p: &ParamRef, out: &mut [u8]) -> Result<(), ParamError> {
            self.reads.push((p.id, CALLS_MADE.load(Ordering::Relaxed)));
            for c in out.chunks_exact_mut(4) {
                c.copy_from_slice(&value(p.id).to_le_bytes());
            }
            if self.broken == Some(p.id) {
                out[0] ^= 1;
            }
            Ok(())
        }
    }

    fn hash_mismatch(id: &str) -> Error {
        Error::Param(ParamError::new(ParamErrorKind::HashMismatch, id, "memory"))
    }

    /// The data of packed argument `i`, a descriptor of four floats.
    ///
    /// # Safety
    /// `args` holds at least `i + 1` handles to descriptors of four floats.
    unsafe fn floats(args: *mut TVMValue, i: usize) -> *mut [f32; 4] {
        // SAFETY: per the contract.
        unsafe { (*(*args.add(i)).v_handle.cast::<DLTensor>()).data.cast::<[f32; 4]>() }
    }

    /// A stand-in for a kernel: `out = x + w`.
    unsafe extern "C" fn add(
        args: *mut TVMValue,
        _: *mut c_int,
        n: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        assert_eq!(n, 3);
        CALLS_MADE.fetch_add(1, Ordering::Relaxed);
        // SAFETY: three handles to four-float descriptors whose data the run made valid.
        unsafe {
            let (x, w) = (*floats(args, 0), *floats(args, 1));
            *floats(args, 2) = core::array::from_fn(|k| x[k] + w[k]);
        }
        0
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
        CALLS_MADE.fetch_add(1, Ordering::Relaxed);
        -1
    }

    static ARENA: StaticArena<64> = StaticArena::new();
    /// The parameter region: `a`, `b` and `c` one after another.
    static REGION: StaticArena<48> = StaticArena::new();
    static INPUT: RunTensor = RunTensor::new();
    static A: Tensor = Tensor::new(REGION.at(0), &SHAPE_4, F32);
    static B: Tensor = Tensor::new(REGION.at(16), &SHAPE_4, F32);
    static C: Tensor = Tensor::new(REGION.at(32), &SHAPE_4, F32);
    static MIDDLE: Tensor = Tensor::new(ARENA.at(0), &SHAPE_4, F32);
    static OUTPUT: Tensor = Tensor::new(ARENA.at(16), &SHAPE_4, F32);
    /// `x + a + b + a`: `a` is used by two calls.
    static CALL_0: Call =
        Call::new("add_a", add, &[INPUT.handle(), A.handle(), MIDDLE.handle()], Scratch::NONE).staging(&[AT_A]);
    static CALL_1: Call =
        Call::new("add_b", add, &[MIDDLE.handle(), B.handle(), OUTPUT.handle()], Scratch::NONE).staging(&[AT_B]);
    static CALL_2: Call =
        Call::new("add_a", add, &[OUTPUT.handle(), A.handle(), MIDDLE.handle()], Scratch::NONE).staging(&[AT_A]);
    static CALLS: [&Call; 3] = [&CALL_0, &CALL_1, &CALL_2];
    /// A model whose second call fails before the third, the only one using `c`, runs.
    static BROKEN: Call = Call::new("fails", fails, &[], Scratch::NONE).staging(&[AT_B]);
    static CALL_C: Call =
        Call::new("add_c", add, &[MIDDLE.handle(), C.handle(), OUTPUT.handle()], Scratch::NONE).staging(&[AT_C]);
    static FAILING: [&Call; 3] = [&CALL_0, &BROKEN, &CALL_C];

    /// One run of `calls` on four 0.5s; the four floats at arena offset 0.
    fn run(calls: &'static [&'static Call], source: &mut Source, loaded: &mut Loaded<1>) -> Result<[f32; 4], Error> {
        CALLS_MADE.store(0, Ordering::Relaxed);
        // SAFETY: every test holds ONE_RUN, so this is the only user of the statics.
        unsafe { INPUT.describe(&SHAPE_4, F32) };
        // SAFETY: as above.
        let mut r = unsafe { Run::enter_with_params(&ARENA, &REGION, 16)? };
        r.input(&INPUT, &[0.5f32; 4][..]);
        // SAFETY: the kernels take the descriptors they are given; parameters are at the
        // offsets the calls stage them at.
        unsafe { r.calls_lazy(calls, source, files(), loaded)? };
        drop(r);
        // SAFETY: the run is over.
        Ok(*unsafe { ARENA.view::<f32, 4>(0) })
    }

    #[test]
    fn each_file_is_read_once_when_its_first_call_runs() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let (mut loaded, mut source) = (Loaded::<1>::new(), Source::new(None));
        assert_eq!(run(&CALLS, &mut source, &mut loaded), Ok([12.5; 4]));
        assert_eq!(source.reads, [("a", 0), ("b", 1)], "each file just before the first call that uses it");
        assert_eq!((loaded.count(), loaded.contains(2)), (2, false));
        assert_eq!(run(&CALLS, &mut source, &mut loaded), Ok([12.5; 4]));
        assert_eq!(source.reads.len(), 2, "the second run reads nothing");
        // Calls that never run never load: the run stops at the second call; `c` stays unread.
        let (mut loaded, mut source) = (Loaded::<1>::new(), Source::new(None));
        assert!(matches!(run(&FAILING, &mut source, &mut loaded), Err(Error::OperatorFailed { index: 1, .. })));
        assert_eq!(source.files(), ["a", "b"]);
        assert!(!loaded.contains(2));
    }

    #[test]
    fn a_failed_read_is_returned_and_read_again_by_the_next_run() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let (mut loaded, mut broken) = (Loaded::<1>::new(), Source::new(Some("b")));
        assert_eq!(run(&CALLS, &mut broken, &mut loaded), Err(hash_mismatch("b")));
        assert_eq!(broken.reads, [("a", 0), ("b", 1)]);
        assert!(loaded.contains(0) && !loaded.contains(1), "the damaged file stays unloaded");
        // The same source fails again (it is read again, not taken as loaded).
        assert_eq!(run(&CALLS, &mut broken, &mut loaded), Err(hash_mismatch("b")));
        assert_eq!(broken.files(), ["a", "b", "b"]);
        let mut sound = Source::new(None);
        assert_eq!(run(&CALLS, &mut sound, &mut loaded), Ok([12.5; 4]));
        assert_eq!(sound.reads, [("b", 1)], "only what is missing, before its call");
        assert_eq!(run(&CALLS, &mut sound, &mut loaded), Ok([12.5; 4]));
        assert_eq!(sound.reads.len(), 1);
    }

    #[test]
    fn load_missing_reads_what_is_not_loaded() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let mut loaded = Loaded::<1>::new();
        // SAFETY: ONE_RUN is held.
        let mut r = unsafe { Run::enter_with_params(&ARENA, &REGION, 16) }.unwrap();
        let mut broken = Source::new(Some("b"));
        assert_eq!(r.load_missing(&mut broken, files(), &OFFSETS, &mut loaded), Err(hash_mismatch("b")));
        assert_eq!((broken.files(), loaded.count()), (std::vec!["a", "b"], 1));
        let mut sound = Source::new(None);
        r.load_missing(&mut sound, files(), &OFFSETS, &mut loaded).unwrap();
        r.load_missing(&mut sound, files(), &OFFSETS, &mut loaded).unwrap();
        assert_eq!((sound.files(), loaded.count()), (std::vec!["b", "c"], 3));
        r.load_once(&mut sound, files(), AT_A, &mut loaded).unwrap();
        assert_eq!(sound.reads.len(), 2);
        drop(r);
        // SAFETY: the run is over.
        assert_eq!(unsafe { (*REGION.view::<f32, 4>(16), *REGION.view::<f32, 4>(32)) }, ([10.0; 4], [100.0; 4]));
    }

    /// What the C's table is for the graph test (a Rust static of the same layout).
    static TABLE: ArrayTable<2> = ArrayTable::new();

    /// A kernel as the rewritten C reads it: `out = x × array 0` (`scale`) or `x + array 1`
    /// (`shift`) through the table.
    unsafe fn with_array(args: *mut TVMValue, slot: usize, f: fn(f32, f32) -> f32) -> i32 {
        CALLS_MADE.fetch_add(1, Ordering::Relaxed);
        // SAFETY: two handles to four-float descriptors; the entry is bound before the call.
        unsafe {
            let (x, w) = (*floats(args, 0), *TABLE.get(slot).cast::<[f32; 4]>());
            *floats(args, 1) = core::array::from_fn(|k| f(x[k], w[k]));
        }
        0
    }

    unsafe extern "C" fn scale(
        a: *mut TVMValue,
        _: *mut c_int,
        _: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        // SAFETY: called by the run with two descriptors.
        unsafe { with_array(a, 0, |x, w| x * w) }
    }

    unsafe extern "C" fn shift(
        a: *mut TVMValue,
        _: *mut c_int,
        _: c_int,
        _: *mut TVMValue,
        _: *mut c_int,
        _: *mut c_void,
    ) -> i32 {
        // SAFETY: called by the run with two descriptors.
        unsafe { with_array(a, 1, |x, w| x + w) }
    }

    static SCALE: Call = Call::new("scale", scale, &[INPUT.handle(), MIDDLE.handle()], Scratch::NONE);
    static SHIFT: Call = Call::new("shift", shift, &[MIDDLE.handle(), OUTPUT.handle()], Scratch::NONE);
    static ARRAY_CALLS: [&Call; 2] = [&SCALE, &SHIFT];
    /// Entry 0 is file `a`, entry 1 file `b`, each at its resident offset.
    static STEPS: [Step; 2] = [
        Step { stage: &[AT_A], bind: &[Bind { slot: 0, offset: 0, bytes: 16 }] },
        Step { stage: &[AT_B], bind: &[Bind { slot: 1, offset: 16, bytes: 16 }] },
    ];

    #[test]
    fn graph_arrays_are_loaded_and_bound_when_their_call_first_runs() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let run = |source: &mut Source, loaded: &mut Loaded<1>| -> Result<[f32; 4], Error> {
            CALLS_MADE.store(0, Ordering::Relaxed);
            // SAFETY: ONE_RUN is held.
            unsafe { INPUT.describe(&SHAPE_4, F32) };
            // SAFETY: as above.
            let mut r = unsafe { Run::enter_with_params(&ARENA, &REGION, 16)? };
            r.input(&INPUT, &[0.5f32; 4][..]);
            // SAFETY: the kernels take the descriptors they are given; `STEPS` bind what they read.
            unsafe { r.calls_lazy_with_arrays(&ARRAY_CALLS, source, files(), &STEPS, &TABLE, loaded)? };
            drop(r);
            // SAFETY: the run is over.
            Ok(*unsafe { ARENA.view::<f32, 4>(16) })
        };
        let (mut loaded, mut broken) = (Loaded::<1>::new(), Source::new(Some("b")));
        assert_eq!(run(&mut broken, &mut loaded), Err(hash_mismatch("b")));
        assert_eq!(TABLE.get(0), REGION.at(0).cast_const(), "bound once its file is in place");
        assert!(TABLE.get(1).is_null(), "not bound: its file did not load");
        let mut sound = Source::new(None);
        assert_eq!(run(&mut sound, &mut loaded), Ok([10.5; 4]));
        assert_eq!(sound.reads, [("b", 1)]);
        assert_eq!(TABLE.get(1), REGION.at(16).cast_const());
        assert_eq!(run(&mut sound, &mut loaded), Ok([10.5; 4]));
        assert_eq!(sound.reads.len(), 1, "the second run reads nothing");
    }

    /// The AOT test's table, hook slot and streaming cell.
    static HOOK_TABLE: ArrayTable<2> = ArrayTable::new();
    static HOOK: StageHook = StageHook::new();
    static STREAM: Streaming = Streaming::new();

    unsafe extern "C" fn hook(step: c_int) -> c_int {
        // SAFETY: called by `main` below only while the test holds a guard.
        unsafe { STREAM.stage(step) }
    }

    /// An AOT main as the rewritten C reads it: the hook (when set) before each of its two
    /// calls, `x × array 0` then `+ array 1`.
    fn main(x: [f32; 4]) -> Result<[f32; 4], c_int> {
        let mut x = x;
        for step in 0..2 {
            if let Some(f) = HOOK.installed() {
                // SAFETY: the hook of this test.
                let rc = unsafe { f(step) };
                if rc != 0 {
                    return Err(rc);
                }
            }
            // SAFETY: bound by the step just staged.
            let w = unsafe { *HOOK_TABLE.get(step as usize).cast::<[f32; 4]>() };
            x = core::array::from_fn(|k| if step == 0 { x[k] * w[k] } else { x[k] + w[k] });
        }
        Ok(x)
    }

    #[test]
    fn aot_hook_loads_each_file_once() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let run = |source: &mut Source, loaded: &mut Loaded<1>| {
            // SAFETY: ONE_RUN is held; `main` calls the hook only while the guard lives.
            let guard = unsafe { STREAM.begin(source, &REGION, &HOOK_TABLE, &STEPS, files(), (&HOOK, hook)) };
            let guard = guard.loading_once(loaded);
            let out = main([0.5; 4]);
            (out, guard.end())
        };
        let (mut loaded, mut broken) = (Loaded::<1>::new(), Source::new(Some("b")));
        assert_eq!(run(&mut broken, &mut loaded), (Err(-1), Err(hash_mismatch("b"))));
        assert_eq!((broken.files(), loaded.contains(0), loaded.contains(1)), (std::vec!["a", "b"], true, false));
        let mut sound = Source::new(None);
        assert_eq!(run(&mut sound, &mut loaded), (Ok([10.5; 4]), Ok(())));
        assert_eq!(run(&mut sound, &mut loaded), (Ok([10.5; 4]), Ok(())));
        assert_eq!(sound.files(), ["b"], "read once, in the first run that lacked it");
        assert!(HOOK.installed().is_none(), "the slot is empty after the run");
    }
}
