//! How a C × H × W u8 feature map is laid out in KPU RAM (2 MiB, addressed in 64-byte rows).
//!
//! A map of width W stored from byte `base` puts channel `c`, row `y`, column `x` at
//! `base + (c / groups)·row_len·H·64 + (c % groups)·pitch + y·row_len·64 + x`, where
//! W ≤ 16: 4 channels share a 64-byte row (pitch 16); W ≤ 32: 2 channels (pitch 32);
//! otherwise one channel per `ceil(W / 64)` rows (pitch 64). Bytes in the gaps are never
//! written. This is the layout of the Kendryte SDK's `kpu_upload_core`
//! (`kendryte/kendryte-standalone-sdk`, `lib/drivers/kpu.c`) and nncase v0.2's
//! `kpu_upload`/`kpu_download` (`src/common/include/kernels/k210/k210_kernels.h`).

/// Row layout of a map of width `w`: (channels per row group, 64-byte rows per image row,
/// byte pitch between the channels of a group).
pub fn row_layout(w: u32) -> (u32, u32, u32) {
    if w <= 16 {
        (4, 1, 16)
    } else if w <= 32 {
        (2, 1, 32)
    } else {
        (1, w.div_ceil(64), 64)
    }
}

/// Bytes one C × H × W map occupies in KPU RAM (nncase's `get_kpu_bytes`); a multiple of 64.
pub fn map_bytes(w: u32, h: u32, c: u32) -> u64 {
    let (groups, row_len, _) = row_layout(w);
    // Saturating: V4 shapes come from the file and may be absurd (the caller then refuses them).
    (row_len as u64).saturating_mul(h as u64).saturating_mul(c.div_ceil(groups.min(c.max(1))) as u64).saturating_mul(64)
}

/// Byte offset of row `y` of channel `c` of a map of width `w`, height `h` (relative to the
/// map's start).
#[inline]
pub fn row_offset(w: u32, h: u32, c: u32, y: u32) -> usize {
    let (groups, row_len, pitch) = row_layout(w);
    ((c / groups) * row_len * h * 64 + (c % groups) * pitch + y * row_len * 64) as usize
}

/// Writes `n` compact u8 C × H × W maps from `src` into KPU RAM at byte `dst` with the KPU
/// layout (batch `b` starts `b` maps after `dst`).
pub fn upload(src: &[u8], kpu: &mut [u8], dst: usize, n: u32, c: u32, h: u32, w: u32) {
    let fmap = map_bytes(w, h, c) as usize;
    let mut it = src.chunks_exact(w as usize);
    for b in 0..n as usize {
        for ch in 0..c {
            for y in 0..h {
                let o = dst + b * fmap + row_offset(w, h, ch, y);
                if let Some(row) = it.next() {
                    kpu[o..o + w as usize].copy_from_slice(row);
                }
            }
        }
    }
}

/// Reads one C × H × W map from KPU RAM at byte `src` into the compact buffer `out`.
pub fn download(kpu: &[u8], src: usize, c: u32, h: u32, w: u32, out: &mut [u8]) {
    let mut it = out.chunks_exact_mut(w as usize);
    for ch in 0..c {
        for y in 0..h {
            let o = src + row_offset(w, h, ch, y);
            if let Some(row) = it.next() {
                row.copy_from_slice(&kpu[o..o + w as usize]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(row_layout(10), (4, 1, 16));
        assert_eq!(row_layout(28), (2, 1, 32));
        assert_eq!(row_layout(320), (1, 5, 64));
        assert_eq!(map_bytes(320, 240, 3), 5 * 240 * 3 * 64);
        assert_eq!(map_bytes(4, 4, 32), 4 * 8 * 64);
        assert_eq!(row_offset(10, 7, 5, 2), 7 * 64 + 16 + 2 * 64);
        let src: [u8; 2 * 2 * 3] = core::array::from_fn(|i| i as u8 + 1);
        let mut kpu = [0u8; 256];
        upload(&src, &mut kpu, 64, 1, 3, 2, 2);
        let mut back = [0u8; 12];
        download(&kpu, 64, 3, 2, 2, &mut back);
        assert_eq!(back, src);
        assert_eq!(kpu[64 + 16], 5);
    }
}
