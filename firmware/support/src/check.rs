//! Reference vectors on the device: little-endian tensors decoded into typed arrays, and outputs
//! compared with them (integers exactly, floats bit by bit and within a tolerance).

/// An element type of a tensor.
pub trait Elem: Copy {
    /// Bytes per element.
    const BYTES: usize;
    /// The element from `BYTES` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
    /// Bit-identical.
    fn same(self, other: Self) -> bool;
    /// Within `tol` of `want` (integers: equal).
    fn close(self, want: Self, tol: Tolerance) -> bool;
    /// Distance to `other`: integers by value, floats in units in the last place (the number
    /// of representable values between them).
    fn distance(self, other: Self) -> u64;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const BYTES: usize = core::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::BYTES]);
                <$t>::from_le_bytes(a)
            }
            fn same(self, other: Self) -> bool {
                self == other
            }
            fn close(self, want: Self, _: Tolerance) -> bool {
                self == want
            }
            fn distance(self, other: Self) -> u64 {
                (self as i64).abs_diff(other as i64)
            }
        }
    )*};
}
int_elem!(i8, u8, i16, u16, i32, u32);

impl Elem for f32 {
    const BYTES: usize = 4;
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
    fn close(self, want: Self, tol: Tolerance) -> bool {
        let abs = |x: f32| f32::from_bits(x.to_bits() & 0x7FFF_FFFF);
        abs(self - want) <= tol.atol + tol.rtol * abs(want)
    }
    fn distance(self, other: Self) -> u64 {
        // Maps the bit patterns onto a line where adjacent floats are adjacent integers.
        let key = |x: f32| {
            let b = x.to_bits() as i32;
            i64::from(if b < 0 { i32::MIN - b } else { b })
        };
        key(self).abs_diff(key(other))
    }
}

/// Allowed difference of floats: `|got - want| <= atol + rtol * |want|`.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Relative part.
    pub rtol: f32,
    /// Absolute part.
    pub atol: f32,
}

impl Tolerance {
    /// The fixtures' default (`rtol` 1e-5, `atol` 1e-6).
    pub const DEFAULT: Tolerance = Tolerance { rtol: 1e-5, atol: 1e-6 };
}

/// How an output compares with its reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Every element bit-identical.
    BitExact,
    /// Every element within the tolerance, some not bit-identical.
    Close,
    /// Some element outside the tolerance, or the lengths differ.
    Differs,
}

impl Match {
    /// The name printed in reports (`bit-exact`, `close`, `differs`).
    pub fn name(self) -> &'static str {
        match self {
            Match::BitExact => "bit-exact",
            Match::Close => "close",
            Match::Differs => "differs",
        }
    }

    /// The worse of two comparisons (for a case with several outputs).
    pub fn and(self, other: Match) -> Match {
        match (self, other) {
            (Match::Differs, _) | (_, Match::Differs) => Match::Differs,
            (Match::Close, _) | (_, Match::Close) => Match::Close,
            _ => Match::BitExact,
        }
    }
}

/// How an output compared with its reference: the verdict and the largest
/// [`Elem::distance`] of an element (`u64::MAX` when the lengths differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The verdict.
    pub result: Match,
    /// The largest distance of an element (floats: units in the last place).
    pub max_distance: u64,
}

impl Comparison {
    /// The worse of two comparisons (for a case with several outputs).
    pub fn and(self, other: Comparison) -> Comparison {
        Comparison { result: self.result.and(other.result), max_distance: self.max_distance.max(other.max_distance) }
    }
}

/// Compares `got` with the little-endian reference `want`.
pub fn compare<T: Elem>(got: &[T], want: &[u8], tol: Tolerance) -> Comparison {
    if got.len().checked_mul(T::BYTES) != Some(want.len()) {
        return Comparison { result: Match::Differs, max_distance: u64::MAX };
    }
    let mut result = Match::BitExact;
    let mut max_distance = 0;
    for (g, w) in got.iter().zip(want.chunks_exact(T::BYTES)) {
        let w = T::from_le(w);
        if g.same(w) {
            continue;
        }
        max_distance = max_distance.max(g.distance(w));
        result = result.and(if g.close(w, tol) { Match::Close } else { Match::Differs });
    }
    Comparison { result, max_distance }
}

/// A reference tensor decoded into an array (`None` when the length is not `N` elements).
pub fn decode<T: Elem + Default, const N: usize>(bytes: &[u8]) -> Option<[T; N]> {
    if bytes.len() != N.checked_mul(T::BYTES)? {
        return None;
    }
    let mut out = [T::default(); N];
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(T::BYTES)) {
        *o = T::from_le(b);
    }
    Some(out)
}

/// A reference case: the little-endian bytes of each input and expected output, in order.
#[derive(Clone, Copy, Debug)]
pub struct TestCase {
    /// Inputs, in the model's order.
    pub inputs: &'static [&'static [u8]],
    /// Expected outputs, in the model's order.
    pub outputs: &'static [&'static [u8]],
}
