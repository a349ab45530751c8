//! Element types of typed tensors, their DLPack description, and views of arena bytes as typed
//! arrays.

/// DLPack's `DLDataType`: type code, bits, lanes (`repr(C)`, passed to generated C).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// `kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, …
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes.
    pub lanes: u16,
}

impl DLDataType {
    /// A scalar type.
    pub const fn new(code: u8, bits: u8) -> Self {
        DLDataType { code, bits, lanes: 1 }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A plain numeric element type of a model's inputs and outputs (`f32`, `i8`, …): any bit
/// pattern is a valid value, so bytes can be viewed as it.
pub trait Element: Copy + sealed::Sealed + 'static {
    /// Its DLPack type.
    const DL: DLDataType;
}

macro_rules! element {
    ($($t:ty => $code:literal, $bits:literal;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DL: DLDataType = DLDataType::new($code, $bits);
        }
    )*};
}

element! {
    f32 => 2, 32;
    f64 => 2, 64;
    i8 => 0, 8;
    i16 => 0, 16;
    i32 => 0, 32;
    i64 => 0, 64;
    u8 => 1, 8;
    u16 => 1, 16;
    u32 => 1, 32;
    u64 => 1, 64;
}

/// Views `M` elements of `T` at `offset` in `bytes`.
///
/// # Panics
/// If the range is outside `bytes` or misaligned for `T` (generated code checks both at compile
/// time, so this cannot happen for it).
pub fn view<T: Element, const M: usize>(bytes: &[u8], offset: usize) -> &[T; M] {
    let size = core::mem::size_of::<[T; M]>();
    let slice = &bytes[offset..offset + size];
    assert!(slice.as_ptr().align_offset(core::mem::align_of::<T>()) == 0, "misaligned tensor view");
    // SAFETY: the slice holds exactly size_of::<[T; M]>() bytes, is aligned for T (checked), and
    // every bit pattern is a valid T (`Element` is sealed to plain numeric types).
    unsafe { &*slice.as_ptr().cast::<[T; M]>() }
}

/// Views a typed array as its bytes (little-endian on every supported target).
pub fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: plain numeric types have no padding; the byte length is the slice's size.
    unsafe { core::slice::from_raw_parts(data.as_ptr().cast(), core::mem::size_of_val(data)) }
}
