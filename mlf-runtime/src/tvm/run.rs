//! One run of a TVM model: the tensor table, the workspace session, and the calls into
//! generated C. Generated modules drive a [`Run`]; they never build pointers themselves.

use core::ffi::{c_int, c_void};
use core::marker::PhantomData;

use super::ffi::{DLDataType, DLDevice, DLTensor, K_ARG_INT, K_DL_TENSOR_HANDLE, K_OPAQUE_HANDLE, PackedFn, TVMValue};
use super::workspace::Session;
use crate::element::Element;
use crate::error::{Error, Message};

/// A model run: `N` tensor slots, the model's arena (tensors placed at build-time offsets, and
/// the workspace window for `TVMBackendAllocWorkspace`).
pub struct Run<'a, const N: usize> {
    session: Session<'a>,
    base: *mut u8,
    len: usize,
    params: *mut u8,
    params_len: usize,
    tensors: [DLTensor; N],
    /// Bytes readable at each slot's data pointer (0 while unbound).
    lens: [usize; N],
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a, const N: usize> Run<'a, N> {
    /// Starts a run over `arena`; workspace allocations are aligned to `align`.
    /// Fails with [`Error::Busy`] when another model is running.
    pub fn enter(arena: &'a mut [u8], align: usize) -> Result<Self, Error> {
        // One pointer for the whole run: the session's workspace and the tensors placed here are
        // both derived from it (reborrowing `arena` again would invalidate it).
        let len = arena.len();
        let base = arena.as_mut_ptr();
        let session = Session::enter_raw(base, len, align)?;
        Ok(Run {
            session,
            base,
            len,
            params: core::ptr::null_mut(),
            params_len: 0,
            tensors: [DLTensor::EMPTY; N],
            lens: [0; N],
            _borrow: PhantomData,
        })
    }

    /// Starts a run with a second region for external parameters: loaded before the run
    /// (resident placement) or filled operator by operator with [`Run::stage`] (streamed).
    pub fn enter_with_params(arena: &'a mut [u8], params: &'a mut [u8], align: usize) -> Result<Self, Error> {
        let mut r = Self::enter(arena, align)?;
        r.params = params.as_mut_ptr();
        r.params_len = params.len();
        Ok(r)
    }

    /// Binds slot `i` to `bytes` at `offset` in the parameter region.
    ///
    /// # Panics
    /// If the tensor does not fit the region (impossible for generated code).
    pub fn param(&mut self, i: usize, offset: usize, bytes: usize, shape: &'static [i64], dtype: DLDataType) {
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.params_len), "parameter outside its region");
        // SAFETY: inside the parameter region borrowed for 'a (checked above).
        let p = unsafe { self.params.add(offset) };
        self.set(i, p.cast(), bytes, shape, dtype);
    }

    /// Reads parameter `p` from `source` into the parameter region at `offset` (checking size and
    /// hash), for the next call (streamed placement).
    pub fn stage(
        &mut self,
        source: &mut dyn crate::params::ParamSource,
        p: &crate::params::ParamRef,
        offset: usize,
    ) -> Result<(), Error> {
        assert!(offset.checked_add(p.bytes).is_some_and(|end| end <= self.params_len), "parameter outside its region");
        // SAFETY: the range is inside the parameter region borrowed mutably for 'a (checked above);
        // no call is running, so no C code reads it while it is rewritten.
        let buf = unsafe { core::slice::from_raw_parts_mut(self.params.add(offset), p.bytes) };
        source.load(p, buf)?;
        Ok(())
    }

    /// Binds slot `i` to `data`, of which `len` bytes are readable.
    fn set(&mut self, i: usize, data: *mut c_void, len: usize, shape: &'static [i64], dtype: DLDataType) {
        self.lens[i] = len;
        self.tensors[i] = DLTensor {
            data,
            device: DLDevice::CPU,
            ndim: shape.len() as i32,
            dtype,
            shape: shape.as_ptr().cast_mut(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
    }

    /// Binds slot `i` to a caller's input (read, never written, by the kernels).
    pub fn input<T: Element>(&mut self, i: usize, data: &'a [T], shape: &'static [i64]) {
        self.set(i, data.as_ptr().cast_mut().cast(), core::mem::size_of_val(data), shape, T::DL);
    }

    /// Binds slot `i` to constant bytes (an embedded parameter), read in place.
    pub fn constant(&mut self, i: usize, data: &'static [u8], shape: &'static [i64], dtype: DLDataType) {
        self.set(i, data.as_ptr().cast_mut().cast(), data.len(), shape, dtype);
    }

    /// Binds slot `i` to `bytes` at `offset` in the arena.
    ///
    /// # Panics
    /// If the tensor does not fit the arena (impossible for generated code: offsets are checked
    /// at compile time).
    pub fn arena(&mut self, i: usize, offset: usize, bytes: usize, shape: &'static [i64], dtype: DLDataType) {
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "tensor outside the arena");
        // SAFETY: `offset + bytes <= len`, so the pointer is inside the arena borrowed for 'a.
        let p = unsafe { self.base.add(offset) };
        self.set(i, p.cast(), bytes, shape, dtype);
    }

    /// Copies a caller's input into the arena at `offset` (used when a model writes into the
    /// storage of an input, so the caller's buffer cannot be used in place).
    pub fn copy_in<T: Element>(&mut self, offset: usize, data: &[T]) {
        let bytes = core::mem::size_of_val(data);
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "copy outside the arena");
        // SAFETY: the destination range is inside the arena (checked above), the source is a
        // valid slice, and they cannot overlap (the arena is borrowed mutably for 'a).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), self.base.add(offset), bytes) };
    }

    /// Copies `bytes` bytes from the data of slot `slot` (an input or parameter) into the arena
    /// at `offset` (for outputs that are inputs or parameters themselves).
    ///
    /// # Panics
    /// If the slot is unbound or holds fewer than `bytes` bytes, or the copy does not fit the
    /// arena (impossible for generated code).
    pub fn copy_slot(&mut self, slot: usize, offset: usize, bytes: usize) {
        assert!(offset.checked_add(bytes).is_some_and(|end| end <= self.len), "copy outside the arena");
        let src = self.tensors[slot].data.cast::<u8>().cast_const();
        assert!(!src.is_null(), "slot not bound");
        assert!(bytes <= self.lens[slot], "copy past the end of the slot's data");
        // SAFETY: `src` is readable for `lens[slot]` >= `bytes` bytes (recorded when the slot was
        // bound to a slice, an arena or parameter range, or a linked parameter, see `linked`);
        // the destination is inside the arena (checked above) and cannot overlap caller or flash
        // memory.
        unsafe { core::ptr::copy_nonoverlapping(src, self.base.add(offset), bytes) };
    }

    /// Points the workspace at `[offset, offset + len)` of the arena (the slot planned for the
    /// next operator's scratch memory).
    pub fn workspace(&mut self, offset: usize, len: usize) {
        self.session.set_window(offset, len);
    }

    /// Calls packed function `f` (call number `index`, C name `name`) with the tensors in
    /// `slots` as `DLTensor*` arguments.
    ///
    /// # Safety
    /// `f` must be the model's generated packed function of that name, and the tensors in
    /// `slots` must be bound with the shapes and dtypes it was compiled for (the code generator
    /// checks both against the model at build time).
    pub unsafe fn call<const K: usize>(
        &mut self,
        index: u16,
        name: &'static str,
        f: PackedFn,
        slots: [u16; K],
    ) -> Result<(), Error> {
        // Packed AOT entries forward their arrays to a main that reads type codes for the pools
        // they append, so the arrays are padded well past K.
        const PAD: usize = 8;
        assert!(K + PAD <= MAX_PACKED_ARGS, "too many arguments for a packed call");
        let mut values = [TVMValue { v_int64: 0 }; MAX_PACKED_ARGS];
        let mut codes = [K_DL_TENSOR_HANDLE; MAX_PACKED_ARGS];
        for (v, &s) in values.iter_mut().zip(slots.iter()) {
            v.v_handle = (&mut self.tensors[s as usize] as *mut DLTensor).cast();
        }
        let mut ret = TVMValue { v_int64: 0 };
        let mut ret_code: c_int = 0;
        // SAFETY: per the caller's contract `f` is a generated kernel taking K tensors; every
        // handle points at a DLTensor in `self.tensors` whose data is live for 'a.
        let rc = unsafe {
            f(values.as_mut_ptr(), codes.as_mut_ptr(), K as c_int, &mut ret, &mut ret_code, core::ptr::null_mut())
        };
        self.finish(index, name, rc)
    }

    /// Calls an unpacked function (one data pointer per argument) with the data of the
    /// tensors in `slots`.
    ///
    /// # Safety
    /// As for [`Run::call`]: `f` is the generated function and `slots` match its parameters.
    pub unsafe fn call_unpacked<F: UnpackedFn<K>, const K: usize>(
        &mut self,
        index: u16,
        name: &'static str,
        f: F,
        slots: [u16; K],
    ) -> Result<(), Error> {
        let mut ptrs = [core::ptr::null_mut(); K];
        for (p, &s) in ptrs.iter_mut().zip(slots.iter()) {
            *p = self.tensors[s as usize].data;
        }
        // SAFETY: per the caller's contract.
        let rc = unsafe { f.call(ptrs) };
        self.finish(index, name, rc)
    }

    /// Calls a C-interface AOT entry `run(struct inputs*, struct outputs*[, struct pools*])`
    /// (`A` = 2 or 3 parameters): each struct is an array of `void*`, filled with the data of
    /// the tensors in the given slots, in the header's member order.
    ///
    /// # Safety
    /// As for [`Run::call`]; the struct layouts are the header's (all members `void*`).
    pub unsafe fn call_struct_entry<
        F: UnpackedFn<A>,
        const A: usize,
        const I: usize,
        const O: usize,
        const P: usize,
    >(
        &mut self,
        name: &'static str,
        f: F,
        inputs: [u16; I],
        outputs: [u16; O],
        pools: [u16; P],
    ) -> Result<(), Error> {
        let mut ins = [core::ptr::null_mut::<c_void>(); I];
        let mut outs = [core::ptr::null_mut::<c_void>(); O];
        let mut pls = [core::ptr::null_mut::<c_void>(); P];
        for (p, &s) in ins.iter_mut().zip(inputs.iter()) {
            *p = self.tensors[s as usize].data;
        }
        for (p, &s) in outs.iter_mut().zip(outputs.iter()) {
            *p = self.tensors[s as usize].data;
        }
        for (p, &s) in pls.iter_mut().zip(pools.iter()) {
            *p = self.tensors[s as usize].data;
        }
        let all: [*mut c_void; 3] = [ins.as_mut_ptr().cast(), outs.as_mut_ptr().cast(), pls.as_mut_ptr().cast()];
        let mut args = [core::ptr::null_mut(); A];
        args.copy_from_slice(&all[..A]);
        // SAFETY: per the caller's contract; the three arrays live until the call returns.
        let rc = unsafe { f.call(args) };
        self.finish(0, name, rc)
    }

    /// Binds slot `i` to the storage `_lookup_linked_param` returns for storage id `sid`
    /// (TVM 0.8 linked parameters, which live in the C's read-only data).
    ///
    /// # Safety
    /// `lookup` must be the model's generated `_lookup_linked_param`, and the parameter it
    /// returns for `sid` must hold `shape` elements of `dtype` (its bytes are taken as readable).
    pub unsafe fn linked(
        &mut self,
        i: usize,
        lookup: PackedFn,
        sid: i64,
        shape: &'static [i64],
        dtype: DLDataType,
    ) -> Result<(), Error> {
        let mut arg = TVMValue { v_int64: sid };
        let mut code = K_ARG_INT;
        let mut ret = TVMValue { v_int64: 0 };
        let mut ret_code: c_int = 0;
        // SAFETY: `lookup` is the generated switch over storage ids; it reads `args[0].v_int64`
        // and writes one value and type code.
        let rc = unsafe { lookup(&mut arg, &mut code, 1, &mut ret, &mut ret_code, core::ptr::null_mut()) };
        // SAFETY: reading the union as a handle is what the callee wrote for code 3.
        let handle = unsafe { ret.v_handle };
        if rc != 0 || ret_code != K_OPAQUE_HANDLE || handle.is_null() {
            return Err(Error::OperatorFailed {
                index: 0,
                function: "_lookup_linked_param",
                code: rc,
                message: Message::new("no linked parameter for this storage id"),
            });
        }
        let elems = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
        let len = elems.and_then(|n| n.checked_mul((dtype.bits as usize * dtype.lanes as usize).div_ceil(8)));
        self.set(i, handle, len.unwrap_or(0), shape, dtype);
        Ok(())
    }

    fn finish(&mut self, index: u16, name: &'static str, rc: i32) -> Result<(), Error> {
        if rc != 0 {
            return Err(self.session.failure(index, name, rc));
        }
        self.session.check_balanced(index, name)
    }

    /// The highest arena offset the workspace reached during this run.
    pub fn high_water(&self) -> usize {
        self.session.high_water()
    }
}

/// Most arguments (plus padding) a packed call passes.
pub const MAX_PACKED_ARGS: usize = 64;

/// An unpacked C function taking `K` data pointers and returning an `int32_t` status.
pub trait UnpackedFn<const K: usize>: Copy {
    /// Calls it.
    ///
    /// # Safety
    /// The pointers must be what the function expects.
    unsafe fn call(self, args: [*mut c_void; K]) -> i32;
}

macro_rules! unpacked {
    ($k:literal: $($i:literal)*) => {
        impl UnpackedFn<$k> for unsafe extern "C" fn($(unpacked!(@p $i)),*) -> i32 {
            unsafe fn call(self, args: [*mut c_void; $k]) -> i32 {
                // SAFETY: forwarded from the caller.
                unsafe { self($(args[$i]),*) }
            }
        }
    };
    (@p $i:literal) => { *mut c_void };
}
unpacked!(1: 0);
unpacked!(2: 0 1);
unpacked!(3: 0 1 2);
unpacked!(4: 0 1 2 3);
unpacked!(5: 0 1 2 3 4);
unpacked!(6: 0 1 2 3 4 5);
unpacked!(7: 0 1 2 3 4 5 6);
unpacked!(8: 0 1 2 3 4 5 6 7);
unpacked!(9: 0 1 2 3 4 5 6 7 8);
unpacked!(10: 0 1 2 3 4 5 6 7 8 9);
unpacked!(11: 0 1 2 3 4 5 6 7 8 9 10);
unpacked!(12: 0 1 2 3 4 5 6 7 8 9 10 11);
unpacked!(13: 0 1 2 3 4 5 6 7 8 9 10 11 12);
unpacked!(14: 0 1 2 3 4 5 6 7 8 9 10 11 12 13);
unpacked!(15: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14);
unpacked!(16: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    /// Runs enter one at a time (without `std` the runtime allows one run per program).
    static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    static SHAPE: [i64; 1] = [8];

    #[test]
    fn copy_slot_copies_a_bound_input() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let mut arena = [0u8; 64];
        let data = [7u8; 8];
        let mut r = Run::<1>::enter(&mut arena, 16).unwrap();
        r.input(0, &data[..], &SHAPE);
        r.copy_slot(0, 16, 8);
        drop(r);
        assert_eq!(&arena[16..24], &[7; 8]);
    }

    #[test]
    #[should_panic(expected = "copy past the end of the slot's data")]
    fn copy_slot_refuses_to_read_past_the_slot() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let mut arena = [0u8; 64];
        let data = [7u8; 64];
        let mut r = Run::<1>::enter(&mut arena, 16).unwrap();
        r.input(0, &data[..8], &SHAPE);
        r.copy_slot(0, 0, 32);
    }
}
