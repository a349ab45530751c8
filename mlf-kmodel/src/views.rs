//! Typed views of input and output bytes (little-endian targets; mlf's arenas are aligned).

use crate::error::KmodelError;

/// Views output bytes as `&[f32; N]` (the memory is 4-aligned in mlf's arenas).
pub fn as_f32_array<const N: usize>(b: &[u8]) -> Result<&[f32; N], KmodelError> {
    if cfg!(target_endian = "big") {
        return Err(KmodelError::OutputLayout);
    }
    let s: &[f32] = bytemuck::try_cast_slice(b).map_err(|_| KmodelError::OutputLayout)?;
    s.try_into().map_err(|_| KmodelError::OutputLayout)
}

/// Views output bytes as `&[u8; N]`.
pub fn as_u8_array<const N: usize>(b: &[u8]) -> Result<&[u8; N], KmodelError> {
    b.try_into().map_err(|_| KmodelError::OutputLayout)
}

/// The bytes of an `f32` input (little-endian targets).
pub fn f32_bytes(x: &[f32]) -> &[u8] {
    bytemuck::cast_slice(x)
}
