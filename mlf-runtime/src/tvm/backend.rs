//! The C functions that TVM-generated code calls, implemented in Rust over the running model's
//! static arena (see [`super::workspace`]).
//!
//! Only what MLF code references is defined: `TVMBackendAllocWorkspace`,
//! `TVMBackendFreeWorkspace`, `TVMAPISetLastError`, `TVMBackendParallelLaunch` and
//! `TVMBackendParallelBarrier`, and for Relax exports' kernels `TVMFFIErrorSetRaisedFromCStrParts`. `__tvm_module_ctx` is never defined here (v1–v2 archives define
//! it themselves).

use core::ffi::{c_char, c_int, c_void};

use super::ffi::{FTVMParallelLambda, TVMParallelGroupEnv};
use super::workspace::with_state;
use crate::error::Message;

/// `void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int
/// dtype_code_hint, int dtype_bits_hint)`: LIFO allocation from the running model's arena.
/// Returns NULL when no model is running, the device is not the CPU, or the arena is exhausted.
#[unsafe(no_mangle)]
pub extern "C" fn TVMBackendAllocWorkspace(
    device_type: c_int,
    device_id: c_int,
    nbytes: u64,
    _dtype_code_hint: c_int,
    _dtype_bits_hint: c_int,
) -> *mut c_void {
    if device_type != 1 || device_id != 0 {
        return core::ptr::null_mut();
    }
    with_state(|s| s.alloc(nbytes)).cast()
}

/// `int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr)`: frees the most
/// recent allocation; anything else (out of order, foreign pointer) returns -1.
#[unsafe(no_mangle)]
pub extern "C" fn TVMBackendFreeWorkspace(device_type: c_int, device_id: c_int, ptr: *mut c_void) -> c_int {
    if device_type != 1 || device_id != 0 {
        return -1;
    }
    with_state(|s| s.free(ptr.cast()))
}

/// `void TVMAPISetLastError(const char* msg)`: keeps (a prefix of) the message for the error
/// value of the failing call.
///
/// # Safety
/// `msg` must be null or point to a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMAPISetLastError(msg: *const c_char) {
    if msg.is_null() {
        return;
    }
    let mut buf = [0u8; Message::CAPACITY];
    let mut n = 0;
    while n < buf.len() {
        // SAFETY: the caller passes a NUL-terminated string; we stop at its NUL.
        let b = unsafe { *msg.add(n) } as u8;
        if b == 0 {
            break;
        }
        buf[n] = b;
        n += 1;
    }
    let text = match core::str::from_utf8(&buf[..n]) {
        Ok(t) => t,
        Err(e) => core::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or(""),
    };
    with_state(|s| s.last_error = Message::new(text));
}

/// `void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t
/// num_parts)`: what a Relax export's kernel calls when a check of its arguments fails; keeps
/// (a prefix of) `kind: parts…` for the error value of the failing call, as
/// [`TVMAPISetLastError`] does.
///
/// # Safety
/// `kind` must be null or a NUL-terminated string, and `parts` null or `num_parts` pointers
/// each null or to a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    parts: *const *const c_char,
    num_parts: i32,
) {
    let mut buf = [0u8; Message::CAPACITY];
    let mut n = 0;
    let mut push = |s: *const c_char| {
        if s.is_null() {
            return;
        }
        let mut i = 0;
        while n < buf.len() {
            // SAFETY: a NUL-terminated string (the caller's contract); we stop at its NUL.
            let b = unsafe { *s.add(i) } as u8;
            if b == 0 {
                break;
            }
            buf[n] = b;
            n += 1;
            i += 1;
        }
    };
    push(kind);
    push(c": ".as_ptr());
    if !parts.is_null() {
        for k in 0..usize::try_from(num_parts).unwrap_or(0) {
            // SAFETY: `parts` holds `num_parts` pointers (the caller's contract).
            push(unsafe { *parts.add(k) });
        }
    }
    let text = match core::str::from_utf8(&buf[..n]) {
        Ok(t) => t,
        Err(e) => core::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or(""),
    };
    with_state(|s| s.last_error = Message::new(text));
}

/// `int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task)`: runs
/// the lambda inline as the single task and returns its result.
///
/// # Safety
/// `flambda` must be a valid function pointer from generated code.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMBackendParallelLaunch(
    flambda: Option<FTVMParallelLambda>,
    cdata: *mut c_void,
    _num_task: c_int,
) -> c_int {
    let Some(f) = flambda else { return -1 };
    let mut env = TVMParallelGroupEnv { sync_handle: core::ptr::null_mut(), num_task: 1 };
    // SAFETY: generated code passes its own lambda and closure data; task 0 of 1 is the whole job.
    unsafe { f(0, &mut env, cdata) }
}

/// `int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv)`: with one task there
/// is nothing to wait for.
#[unsafe(no_mangle)]
pub extern "C" fn TVMBackendParallelBarrier(_task_id: c_int, _penv: *mut TVMParallelGroupEnv) -> c_int {
    0
}
