//! FNV-1a, 64-bit: a stable content hash for naming generated files and symbols (not for
//! integrity), and the xxh64 that names and checks external parameter files.

/// FNV-1a offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a hash over `bytes`.
pub fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    let mut h = hash;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The xxh64 the runtime checks.
pub fn xxh64(data: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(data, 0)
}

/// The identifier of a parameter file: `p` + the xxh64 of its bytes in 16 hex digits.
pub fn id_for(data: &[u8]) -> String {
    format!("p{:016x}", xxh64(data))
}
