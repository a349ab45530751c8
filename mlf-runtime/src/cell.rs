//! Statically allocated model state handed out once at a time: [`TakeOnce`] and [`Arena`].

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// A static value that can be borrowed mutably by one owner at a time, without locks or heap.
///
/// `take` returns the unique `&'static mut` to the value, or `None` while an earlier one has not
/// been given back with [`TakeOnce::release`]. Generated model types call `release` when they are
/// dropped, so `Model::take()` succeeds again after the previous model is gone.
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
    #[allow(clippy::mut_from_ref)] // exclusive by the `taken` flag, see the SAFETY note below
    pub fn take(&'static self) -> Option<&'static mut T> {
        if !self.try_acquire() {
            return None;
        }
        // SAFETY: `try_acquire` succeeded, so no other `&mut` to the value exists until
        // `release` is called by the holder of this one.
        Some(unsafe { &mut *self.value.get() })
    }

    /// Gives the value back.
    ///
    /// # Safety
    /// The caller must own the reference returned by [`TakeOnce::take`] and must not use it
    /// afterwards.
    pub unsafe fn release(&'static self) {
        self.taken.store(false, Ordering::Release);
    }

    #[cfg(target_has_atomic = "8")]
    fn try_acquire(&self) -> bool {
        !self.taken.swap(true, Ordering::Acquire)
    }

    // Targets without atomic read-modify-write (e.g. thumbv6m) are single-core; a load and a
    // store are enough outside interrupt handlers.
    #[cfg(not(target_has_atomic = "8"))]
    fn try_acquire(&self) -> bool {
        if self.taken.load(Ordering::Acquire) {
            return false;
        }
        self.taken.store(true, Ordering::Release);
        true
    }
}

impl<T: 'static> TakeOnce<T> {
    /// Like [`TakeOnce::take`], but the value comes in a guard that gives it back when dropped,
    /// so callers (generated code) need no `unsafe`.
    pub fn take_guard(&'static self) -> Option<Taken<T>> {
        self.take().map(|value| Taken { cell: self, value })
    }
}

/// Exclusive access to the value of a [`TakeOnce`], released on drop.
pub struct Taken<T: 'static> {
    cell: &'static TakeOnce<T>,
    value: &'static mut T,
}

impl<T: 'static> core::ops::Deref for Taken<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: 'static> core::ops::DerefMut for Taken<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T: 'static> Drop for Taken<T> {
    fn drop(&mut self) {
        // SAFETY: this guard owns the only reference handed out by `take`, and `self.value` is
        // not used after this call (the guard is being dropped).
        unsafe { self.cell.release() }
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
        let a = CELL.take().expect("first take");
        a.0[0] = 7;
        assert!(CELL.take().is_none());
        // SAFETY: `a` is not used after this.
        unsafe { CELL.release() };
        let b = CELL.take().expect("take after release");
        assert_eq!(b.0[0], 7);
        assert_eq!(core::mem::align_of::<Arena<16>>(), 64);
    }

    static GUARDED: TakeOnce<u32> = TakeOnce::new(1);

    #[test]
    fn guard_releases_on_drop() {
        let mut g = GUARDED.take_guard().expect("first");
        *g += 1;
        assert!(GUARDED.take_guard().is_none());
        drop(g);
        assert_eq!(*GUARDED.take_guard().expect("again"), 2);
    }
}
