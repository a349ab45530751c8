//! `#[repr(C)]` types of TVM's legacy C ABI and DLPack, laid out exactly as generated C expects
//! (checked by compile-time size and alignment assertions).

use core::ffi::{c_char, c_int, c_void};

/// `DLDevice`: device type and id. MLF code only ever uses `{kDLCPU = 1, 0}`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType` (a C enum: 4 bytes).
    pub device_type: i32,
    /// Device id.
    pub device_id: i32,
}

impl DLDevice {
    /// The CPU.
    pub const CPU: DLDevice = DLDevice { device_type: 1, device_id: 0 };
}

/// `DLDataType` (defined beside the element types it describes).
pub use crate::element::DLDataType;

/// `DLTensor`. Generated C reads `data`, `shape`, `strides`, `ndim`, `dtype` and `device`; it
/// does not add `byte_offset`, so `data` always points at element 0 and `byte_offset` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// Element 0.
    pub data: *mut c_void,
    /// Device.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// Shape (`ndim` values).
    pub shape: *mut i64,
    /// Strides; null means compact row-major.
    pub strides: *mut i64,
    /// Always 0.
    pub byte_offset: u64,
}

impl DLTensor {
    /// A tensor with no data (filled in before a call).
    pub const EMPTY: DLTensor = DLTensor {
        data: core::ptr::null_mut(),
        device: DLDevice::CPU,
        ndim: 0,
        dtype: DLDataType::new(0, 0),
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
}

/// `TVMValue`: the 8-byte argument union of packed calls.
#[repr(C)]
#[derive(Clone, Copy)]
pub union TVMValue {
    /// Integer.
    pub v_int64: i64,
    /// Float.
    pub v_float64: f64,
    /// Handle (a `DLTensor*` for tensors).
    pub v_handle: *mut c_void,
    /// C string.
    pub v_str: *const c_char,
    /// Data type.
    pub v_type: DLDataType,
    /// Device.
    pub v_device: DLDevice,
}

/// `TVMParallelGroupEnv`.
#[repr(C)]
pub struct TVMParallelGroupEnv {
    /// Synchronisation handle (unused: tasks run inline).
    pub sync_handle: *mut c_void,
    /// Number of tasks.
    pub num_task: i32,
}

/// `FTVMParallelLambda`.
pub type FTVMParallelLambda =
    unsafe extern "C" fn(task_id: c_int, penv: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int;

/// `TVMBackendPackedCFunc`: the six-parameter packed-function signature of every generated
/// kernel.
pub type PackedFn = unsafe extern "C" fn(
    args: *mut TVMValue,
    type_codes: *mut c_int,
    num_args: c_int,
    out_ret_value: *mut TVMValue,
    out_ret_tcode: *mut c_int,
    resource_handle: *mut c_void,
) -> i32;

/// `TVMFFIAny`: one argument (or result) of a tvm-ffi safe call (TVM ≥ 0.21, the kernels of a
/// Relax export): a type index, four bytes of padding and an 8-byte value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIAny {
    /// The type index ([`K_FFI_INT`], [`K_FFI_DL_TENSOR_PTR`], …).
    pub type_index: i32,
    /// Zero.
    pub zero_padding: u32,
    /// The value: an integer or a pointer, as the type index says.
    pub value: TVMValue,
}

impl TVMFFIAny {
    /// An integer argument (type index 1).
    pub const fn int(v: i64) -> TVMFFIAny {
        TVMFFIAny { type_index: K_FFI_INT, zero_padding: 0, value: TVMValue { v_int64: v } }
    }

    /// A `DLTensor*` argument (type index 7).
    pub const fn tensor(t: *mut DLTensor) -> TVMFFIAny {
        TVMFFIAny { type_index: K_FFI_DL_TENSOR_PTR, zero_padding: 0, value: TVMValue { v_handle: t.cast() } }
    }
}

/// tvm-ffi's type index of `None`.
pub const K_FFI_NONE: i32 = 0;
/// tvm-ffi's type index of an integer.
pub const K_FFI_INT: i32 = 1;
/// tvm-ffi's type index of a `DLTensor*`.
pub const K_FFI_DL_TENSOR_PTR: i32 = 7;

/// `TVMFFISafeCallType`: the signature of every kernel of a Relax export (`__tvm_ffi_<name>`):
/// `int32_t f(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)`.
pub type FfiFn =
    unsafe extern "C" fn(handle: *mut c_void, args: *const TVMFFIAny, num_args: i32, result: *mut TVMFFIAny) -> i32;

/// Type code of a `DLTensor*` argument (`kTVMDLTensorHandle`).
pub const K_DL_TENSOR_HANDLE: c_int = 7;
/// Type code of an integer argument (`kTVMArgInt`).
pub const K_ARG_INT: c_int = 0;
/// Type code of an opaque handle result (`kTVMOpaqueHandle`).
pub const K_OPAQUE_HANDLE: c_int = 3;
/// Type code of a null result (`kTVMNullptr`).
pub const K_NULLPTR: c_int = 4;

const _: () = {
    assert!(core::mem::size_of::<TVMValue>() == 8);
    assert!(core::mem::size_of::<DLDevice>() == 8);
    assert!(core::mem::size_of::<DLDataType>() == 4);
    assert!(core::mem::size_of::<TVMFFIAny>() == 16);
    assert!(core::mem::offset_of!(TVMFFIAny, value) == 8);
    #[cfg(target_pointer_width = "64")]
    assert!(core::mem::size_of::<DLTensor>() == 48);
    #[cfg(target_pointer_width = "64")]
    assert!(core::mem::offset_of!(DLTensor, byte_offset) == 40);
    #[cfg(all(target_pointer_width = "32", not(target_arch = "x86")))]
    assert!(core::mem::size_of::<DLTensor>() == 40);
    assert!(core::mem::offset_of!(DLTensor, device) == core::mem::size_of::<*mut c_void>());
};
