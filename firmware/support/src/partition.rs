//! The parameter partition of the MPS2 machines: the last 1 MiB of their 4 MiB of code memory,
//! at 0x0030_0000, kept out of the program by `memory.x` (FLASH is 3 MiB). A packed parameter
//! archive (`cargo mlf pack`) is written there separately from the program, as a flasher
//! writes a partition; under QEMU:
//!
//! ```text
//! -device loader,file=params.tar,addr=0x300000,force-raw=on
//! ```
//!
//! Unwritten bytes read as zero under QEMU, which ends a tar archive.

/// The partition's first address (`PARAMS` in `memory.x`).
pub const ADDRESS: usize = 0x0030_0000;
/// The partition's size.
pub const BYTES: usize = 1 << 20;

/// The partition's bytes.
pub fn params() -> &'static [u8] {
    let start = core::ptr::with_exposed_provenance::<u8>(ADDRESS);
    // SAFETY: [ADDRESS, ADDRESS + BYTES) is memory of the machine that memory.x reserves for
    // the partition: no program section or stack is placed there, and nothing writes it while
    // the program runs, so it can be read as an immutable byte slice for the whole program.
    unsafe { core::slice::from_raw_parts(start, BYTES) }
}
