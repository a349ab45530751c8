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

/// A zeroed, 64-byte-aligned byte arena in a `static` (so in `.bss`) that C code writes through
/// raw pointers: the arena of a generated TVM module, its parameter region or staging buffer.
///
/// Its addresses are known when the program links, so descriptors in other statics can point
/// into it ([`StaticArena::at`] is a `const fn`). Taking an address is safe; using the bytes is
/// not: only the owner — the generated `Model`, which holds the module's [`TakeOnce`] state, the
/// one way to reach the arena — reads or writes them, through the `unsafe` methods below.
#[repr(C, align(64))]
pub struct StaticArena<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: the bytes are only reached through raw pointers and the `unsafe` accessors, whose
// callers guarantee exclusive use (see the type's documentation).
unsafe impl<const N: usize> Sync for StaticArena<N> {}

impl<const N: usize> StaticArena<N> {
    /// A zeroed arena.
    pub const fn new() -> Self {
        StaticArena(UnsafeCell::new([0; N]))
    }

    /// Size in bytes.
    pub const fn len(&self) -> usize {
        N
    }

    /// True when `N == 0`.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The address of byte `offset` (at most `N`: one past the end is allowed, as for slices).
    ///
    /// # Panics
    /// If `offset > N` (in a `static` initializer: a compile error).
    pub const fn at(&'static self, offset: usize) -> *mut core::ffi::c_void {
        assert!(offset <= N, "offset outside the arena");
        self.0.get().cast::<u8>().wrapping_add(offset).cast()
    }

    /// The first byte's address.
    pub const fn as_mut_ptr(&'static self) -> *mut u8 {
        self.0.get().cast()
    }

    /// `M` elements of `T` at `offset`, read-only.
    ///
    /// # Safety
    /// The caller owns the arena (see the type's documentation), and nothing writes those bytes
    /// while the returned reference lives.
    ///
    /// # Panics
    /// If the range is outside the arena or misaligned for `T` (generated code checks both at
    /// compile time).
    pub unsafe fn view<T: crate::Element, const M: usize>(&'static self, offset: usize) -> &'static [T; M] {
        let size = core::mem::size_of::<[T; M]>();
        assert!(offset.checked_add(size).is_some_and(|end| end <= N), "view outside the arena");
        // The arena is 64-byte aligned, so the offset says it (and the check folds away).
        let align = core::mem::align_of::<T>();
        assert!(align <= 64 && offset % align == 0, "misaligned tensor view");
        let p = self.as_mut_ptr().wrapping_add(offset);
        // SAFETY: in bounds and aligned (checked); every bit pattern is a valid `T` (`Element`
        // is sealed to plain numeric types); no writer while it lives (the caller's contract).
        unsafe { &*p.cast::<[T; M]>() }
    }

    /// The first `size_of::<T>()` bytes zeroed, as a `T` to be initialised: the state of a
    /// model kept in a shared arena (see [`shared_arena!`](crate::shared_arena)), whose
    /// zero-initialised fields (byte arenas) are then ready and whose other fields the caller
    /// writes through the pointer before making a reference of it.
    ///
    /// # Safety
    /// The caller owns the arena: nothing else reads or writes its bytes while the returned
    /// pointer, or a reference made of it, is used.
    ///
    /// # Panics
    /// If `T` is larger than the arena or aligned to more than 64 bytes (generated code checks
    /// both at compile time).
    pub unsafe fn zeroed_as<T>(&'static self) -> *mut T {
        assert!(core::mem::size_of::<T>() <= N, "state larger than the shared arena");
        assert!(core::mem::align_of::<T>() <= 64, "state aligned beyond the arena's 64 bytes");
        let p = self.as_mut_ptr();
        // SAFETY: the arena holds at least `size_of::<T>()` bytes (checked) and is exclusively the
        // caller's (the contract).
        unsafe { p.write_bytes(0, core::mem::size_of::<T>()) };
        p.cast()
    }

    /// The bytes, writable.
    ///
    /// # Safety
    /// The caller owns the arena, no C call is running, and no other reference to its bytes
    /// lives while the returned one does.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn bytes_mut(&'static self) -> &'static mut [u8; N] {
        // SAFETY: exclusive, per the caller's contract.
        unsafe { &mut *self.0.get() }
    }
}

impl<const N: usize> Default for StaticArena<N> {
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
