//! The tables a generated TVM module keeps in statics, built when it compiles: tensor
//! descriptors at fixed addresses ([`Tensor`]), descriptors whose data pointer a run sets
//! ([`RunTensor`]: the caller's inputs, linked parameters), and the operator calls with their
//! packed arguments ([`Call`]). A run then only stores the caller's input pointers and calls.
//!
//! Descriptors and argument arrays are handed to C as `DLTensor*` and `TVMValue*`, which the
//! C reads and never writes (TVM's generated C only loads from its arguments, see
//! `../shared/docs/tvm-abi.md` §3.2); so the immutable tables can live in read-only memory.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};

use super::ffi::{DLDataType, DLDevice, DLTensor, K_DL_TENSOR_HANDLE, PackedFn, TVMFFIAny, TVMValue};

/// Most arguments a packed call passes; the type codes array is this long (packed AOT
/// entries forward it to a main that reads the codes of pools it appends after the caller's
/// arguments).
pub const MAX_PACKED_ARGS: usize = 64;

/// The type codes of every packed call: all `DLTensor*` (read, never written, by the C).
pub(crate) static TYPE_CODES: [c_int; MAX_PACKED_ARGS] = [K_DL_TENSOR_HANDLE; MAX_PACKED_ARGS];

impl DLTensor {
    /// A compact CPU tensor of `shape` and `dtype` with its data at `data`.
    pub const fn new(data: *mut c_void, shape: &'static [i64], dtype: DLDataType) -> DLTensor {
        DLTensor {
            data,
            device: DLDevice::CPU,
            ndim: shape.len() as i32,
            dtype,
            shape: shape.as_ptr().cast_mut(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        }
    }

    /// A descriptor of all zero bytes (no data, no shape), for statics in `.bss`.
    const ZEROED: DLTensor = DLTensor {
        data: core::ptr::null_mut(),
        device: DLDevice { device_type: 0, device_id: 0 },
        ndim: 0,
        dtype: DLDataType { code: 0, bits: 0, lanes: 0 },
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };

    /// Bytes of its data (elements × bytes per element), `None` on overflow or a negative
    /// dimension.
    pub fn data_bytes(&self) -> Option<usize> {
        let lane_bits = (self.dtype.bits as usize).checked_mul(self.dtype.lanes as usize)?;
        let mut n = lane_bits.div_ceil(8);
        for i in 0..usize::try_from(self.ndim).ok()? {
            // SAFETY: `shape` points at `ndim` dimensions in every descriptor built here.
            let d = unsafe { *self.shape.add(i) };
            n = n.checked_mul(usize::try_from(d).ok()?)?;
        }
        Some(n)
    }
}

/// A tensor descriptor with a fixed address and fixed contents: an arena buffer, an embedded,
/// resident or staged parameter.
#[repr(transparent)]
pub struct Tensor(pub DLTensor);

// SAFETY: immutable after compilation; the pointers in it are only dereferenced by the model's
// C during a run, which the generated `Model` serialises.
unsafe impl Sync for Tensor {}

impl Tensor {
    /// A descriptor of `shape` and `dtype` at `data`.
    pub const fn new(data: *mut c_void, shape: &'static [i64], dtype: DLDataType) -> Tensor {
        Tensor(DLTensor::new(data, shape, dtype))
    }

    /// A descriptor of constant bytes (an embedded parameter), read in place.
    pub const fn constant(data: &'static [u8], shape: &'static [i64], dtype: DLDataType) -> Tensor {
        Tensor(DLTensor::new(data.as_ptr().cast_mut().cast(), shape, dtype))
    }

    /// The packed argument that passes this descriptor (`v_handle`, type code 7).
    pub const fn handle(&'static self) -> TVMValue {
        TVMValue { v_handle: (&self.0 as *const DLTensor).cast_mut().cast() }
    }

    /// The tvm-ffi argument that passes this descriptor (type index 7).
    pub const fn any(&'static self) -> TVMFFIAny {
        TVMFFIAny::tensor((&self.0 as *const DLTensor).cast_mut())
    }
}

/// A tensor descriptor whose data pointer is set by a run: a caller's input (every run) or a
/// parameter the model's C looks up (TVM 0.8's `_lookup_linked_param`, on the first run).
/// Zero until [`RunTensor::describe`], so the static is in `.bss`.
#[repr(transparent)]
pub struct RunTensor(UnsafeCell<DLTensor>);

// SAFETY: written only through `Run` (whose `enter` contract gives the running model exclusive
// use of its descriptors) and read by the model's C during that run.
unsafe impl Sync for RunTensor {}

impl RunTensor {
    /// A zeroed descriptor.
    pub const fn new() -> RunTensor {
        RunTensor(UnsafeCell::new(DLTensor::ZEROED))
    }

    /// The packed argument that passes this descriptor.
    pub const fn handle(&'static self) -> TVMValue {
        TVMValue { v_handle: self.0.get().cast() }
    }

    /// The tvm-ffi argument that passes this descriptor (type index 7).
    pub const fn any(&'static self) -> TVMFFIAny {
        TVMFFIAny::tensor(self.0.get())
    }

    /// The descriptor's address.
    pub(crate) const fn ptr(&'static self) -> *mut DLTensor {
        self.0.get()
    }

    /// Writes the shape and dtype (once per `take`, before the first run); the data pointer is
    /// set by each run.
    ///
    /// # Safety
    /// No C call is running and no other code writes the descriptor (the caller holds the
    /// model's take-once state, which owns it).
    pub unsafe fn describe(&'static self, shape: &'static [i64], dtype: DLDataType) {
        // SAFETY: exclusive, per the caller's contract.
        unsafe { *self.0.get() = DLTensor::new(core::ptr::null_mut(), shape, dtype) };
    }
}

impl Default for RunTensor {
    fn default() -> Self {
        RunTensor::new()
    }
}

/// A window of the arena for one call's `TVMBackendAllocWorkspace`: `len` bytes at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    /// First byte, from the start of the arena.
    pub offset: usize,
    /// Bytes.
    pub len: usize,
}

impl Scratch {
    /// No scratch memory: an allocation fails.
    pub const NONE: Scratch = Scratch { offset: 0, len: 0 };
}

/// A parameter file read into the staging buffer before a call (streamed parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    /// Index of the file in the module's `PARAMS`.
    pub file: u16,
    /// Offset in the staging buffer.
    pub offset: usize,
}

/// One operator call of a graph (or a packed AOT entry): the function, its packed arguments,
/// its scratch window, and the parameter files staged before it. A Relax export's kernel (the
/// tvm-ffi safe-call ABI) is called through a packed-signature wrapper the generated module
/// defines, which passes the call's `TVMFFIAny` arguments ([`call_ffi`](super::call_ffi)); its
/// packed arguments are then empty.
pub struct Call {
    /// The C function's name (for errors).
    pub name: &'static str,
    /// The function.
    pub f: PackedFn,
    /// Its arguments: one `DLTensor*` per tensor (a [`Tensor`] or [`RunTensor`] handle).
    pub args: &'static [TVMValue],
    /// Its `TVMBackendAllocWorkspace` window.
    pub scratch: Scratch,
    /// Streamed parameter files read just before it (empty otherwise).
    pub stage: &'static [Stage],
}

// SAFETY: immutable after compilation; the handles point at descriptors in statics (see
// `Tensor` and `RunTensor`), dereferenced only by the model's C during a run.
unsafe impl Sync for Call {}

/// The `TVMFFIAny` arguments of one call of a Relax export's kernel, in a `static` of the
/// generated module (the call's packed-signature wrapper passes them to the kernel).
pub struct FfiArgs<const N: usize>(pub [TVMFFIAny; N]);

// SAFETY: immutable after compilation; the tensor arguments point at descriptors in statics
// (see `Tensor` and `RunTensor`), dereferenced only by the model's C during a run.
unsafe impl<const N: usize> Sync for FfiArgs<N> {}

impl Call {
    /// A call of `f` (named `name`) with `args`, its scratch window, and no staging.
    ///
    /// # Panics
    /// With more arguments than a packed call can pass (in a `static`: a compile error).
    pub const fn new(name: &'static str, f: PackedFn, args: &'static [TVMValue], scratch: Scratch) -> Call {
        // Packed AOT entries append pools after the arguments and read their type codes.
        assert!(args.len() + 8 <= MAX_PACKED_ARGS, "too many arguments for a packed call");
        Call { name, f, args, scratch, stage: &[] }
    }

    /// The same call with `stage` read into the staging buffer just before it.
    pub const fn staging(self, stage: &'static [Stage]) -> Call {
        Call { stage, ..self }
    }
}

/// Pointers in a static that C reads (an AOT C interface's `outputs` or `workspace_pools`
/// struct: one `void*` per member, every one at a fixed address).
#[repr(transparent)]
pub struct Pointers<const N: usize>(pub [*mut c_void; N]);

// SAFETY: immutable after compilation; read by the model's C during a run.
unsafe impl<const N: usize> Sync for Pointers<N> {}

impl<const N: usize> Pointers<N> {
    /// The struct's address, as the C parameter takes it.
    pub const fn as_arg(&'static self) -> *mut c_void {
        (&self.0 as *const [*mut c_void; N]).cast_mut().cast()
    }
}
