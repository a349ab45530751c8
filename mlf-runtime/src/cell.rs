//! Statically allocated model state handed out once at a time: [`TakeOnce`] and [`Arena`].

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// A static value that can be borrowed mutably by one owner at a time, without locks or heap.
///
/// `take` returns a guard holding the unique `&'static mut` to the value, or `None` while an
/// earlier guard is alive. Dropping the guard gives the value back, so a generated
/// `Model::take()` succeeds again once the previous model is dropped.
pub struct TakeOnce<T> {
    taken: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is only through `take`, which hands out at most one `&mut` at a time
// (guarded by `taken`), so sharing the cell between threads cannot create aliasing references.
unsafe impl<T: Send> Sync for TakeOnce<T> {}

impl<T> TakeOnce<T> {
    /// A cell holding `value`.
    pub const fn new(value: T) -> Self {
        TakeOnce { taken: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// The value, mutably, if nobody holds it.
    pub fn take(&'static self) -> Option<Taken<T>> {
        if !try_set(&self.taken) {
            return None;
        }
        // SAFETY: `try_set` succeeded, so no other reference to the value exists until the
        // returned guard is dropped (which releases the flag).
        let value = unsafe { &mut *self.value.get() };
        Some(Taken { value, cell: &self.taken })
    }
}

/// Sets `flag` if it was clear; false when it was already set (someone holds what it guards).
#[cfg(target_has_atomic = "8")]
pub(crate) fn try_set(flag: &AtomicBool) -> bool {
    !flag.swap(true, Ordering::Acquire)
}

/// Sets `flag` if it was clear. Targets without atomic read-modify-write (e.g. thumbv6m) are
/// single-core; a load and a store are enough outside interrupt handlers.
#[cfg(not(target_has_atomic = "8"))]
pub(crate) fn try_set(flag: &AtomicBool) -> bool {
    if flag.load(Ordering::Acquire) {
        return false;
    }
    flag.store(true, Ordering::Release);
    true
}

/// Exclusive access to the value of a [`TakeOnce`]; gives it back when dropped.
pub struct Taken<T: 'static> {
    value: &'static mut T,
    cell: &'static AtomicBool,
}

impl<T> core::ops::Deref for Taken<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> core::ops::DerefMut for Taken<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T> Drop for Taken<T> {
    fn drop(&mut self) {
        self.cell.store(false, Ordering::Release);
    }
}

/// A statically allocated, 64-byte-aligned byte arena (zero-initialised, so it lives in `.bss`).
#[repr(C, align(64))]
pub struct Arena<const N: usize>(pub [u8; N]);

impl<const N: usize> Arena<N> {
    /// A zeroed arena.
    pub const fn new() -> Self {
        Arena([0; N])
    }

    /// Size in bytes.
    pub const fn len(&self) -> usize {
        N
    }

    /// True when `N == 0`.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes embedded in the program image with a guaranteed alignment (64), for parameters and
/// model files used in place (`include_bytes!` gives no alignment guarantee by itself).
#[repr(C, align(64))]
pub struct Aligned<const N: usize>(pub [u8; N]);

/// Bytes embedded with 256-byte alignment (the K210 KPU reads kmodel tables at 256-byte
/// boundaries).
#[repr(C, align(256))]
pub struct Aligned256<const N: usize>(pub [u8; N]);

#[cfg(test)]
mod tests {
    use super::*;

    static CELL: TakeOnce<Arena<16>> = TakeOnce::new(Arena::new());

    #[test]
    fn take_is_exclusive_until_released() {
        let mut a = CELL.take().expect("first take");
        a.0[0] = 7;
        assert!(CELL.take().is_none());
        drop(a);
        let b = CELL.take().expect("take after release");
        assert_eq!(b.0[0], 7);
        assert_eq!(core::mem::align_of::<Arena<16>>(), 64);
    }

    static GUARDED: TakeOnce<u32> = TakeOnce::new(1);

    #[test]
    fn guard_releases_on_drop() {
        let mut g = GUARDED.take().expect("first");
        *g += 1;
        assert!(GUARDED.take().is_none());
        drop(g);
        assert_eq!(*GUARDED.take().expect("again"), 2);
    }
}
