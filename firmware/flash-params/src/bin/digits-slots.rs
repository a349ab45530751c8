//! Parameters updated in the field: the digits model, lazily loaded, reads its parameters through
//! `Slots` over two flash slots of the partition (A at 0x30_0000, B at 0x34_0000, 256 KiB each),
//! each holding a pack signed with the test key the module was built with (`Model::pack_key`):
//! B is newer (sequence 2) and is used. Then, with a copy of B in RAM damaged — every byte of its
//! header flipped in turn (the header member's tar header and block), then one weight byte —
//! `Slots` must fall back to A every time and name B; a newer pack signed with another key (C, at
//! 0x38_0000, sequence 3) must be refused for A too. The model then runs from the fallback and
//! reproduces every reference case. Prints what opening a pack costs (with and without the
//! signature check; the header and digest alone; with the xxh64 of the covered bytes) and what
//! xxh64 costs per KiB.
#![no_std]
#![no_main]

use device_support::check::{compare, decode};
use device_support::{Report, entry, measure, partition};
use mlf_runtime::params::{FlashArchive, Pack, PackHeader, Slot, Slots};

include!(concat!(env!("OUT_DIR"), "/digits_slots.rs"));

/// Bytes of one slot.
const SLOT: usize = 256 << 10;
/// The newer slot's pack, copied to RAM to be damaged (the digits pack is about 16 KB).
static mut COPY: [u8; 32 << 10] = [0; 32 << 10];
/// The same files and digest without the key: what opening costs without the signature.
static KEYLESS: Pack<{ digits_slots::PARAMS.len() }> =
    Pack::new(&digits_slots::PARAMS, digits_slots::PACK.digest, None);

#[entry]
fn main() -> ! {
    let mut report = Report::start("digits_slots");
    let part = partition::params();
    let (a, b, c) = (&part[..SLOT], &part[SLOT..2 * SLOT], &part[2 * SLOT..3 * SLOT]);
    let (opened, signed) = measure(|| Slots::open(a, b, &digits_slots::PACK));
    match opened {
        Ok(s) if s.active() == Slot::B && s.refused().is_none() => {}
        Ok(_) => report.fail("newer-slot-not-used", None),
        Err(e) => report.fail("slots", Some(&e.b.into())),
    }
    let (unsigned, cost) = measure(|| FlashArchive::open(b, &KEYLESS));
    if unsigned.is_err() {
        report.fail("open-without-key", None);
    }
    report.measured("open_signed_instructions", signed.instructions);
    report.measured("open_unsigned_instructions", cost.instructions);
    report.measured("open_stack", signed.stack as u64);
    // The pack header read (its hash) and compared with the code's digest; with the xxh64 of
    // the covered bytes.
    let digest = Some(&digits_slots::PACK.digest);
    let (_, header) = measure(|| PackHeader::of(b).ok().flatten().map(|h| h.digest) == digest.copied());
    let (_, check) = measure(|| mlf_pack::check(b, digest, None).is_ok());
    report.measured("header_instructions", header.instructions);
    report.measured("check_instructions", check.instructions);
    let (_, hash) = measure(|| mlf_runtime::params::xxh64(core::hint::black_box(&b[..1024])));
    report.measured("xxh64_per_kib", hash.instructions);
    // A newer pack signed with another key.
    match Slots::open(c, a, &digits_slots::PACK) {
        Ok(s) if s.active() == Slot::B && matches!(s.refused(), Some((Slot::A, _))) => {}
        _ => report.fail("foreign-key-not-refused", None),
    }
    // SAFETY: the only reference to COPY, taken once here.
    let copy: &mut [u8; 32 << 10] = unsafe { &mut *core::ptr::addr_of_mut!(COPY) };
    let n = copy.len();
    copy.copy_from_slice(&b[..n]);
    let Some(length) = digits_slots_length(copy) else { report.fail("pack-too-large-for-the-copy", None) };
    let weight = length - 700;
    let mut flips = 0u64;
    for i in (0..1024).chain([weight]) {
        copy[i] ^= 0xff;
        let fell_back = matches!(
            Slots::open(a, &copy[..], &digits_slots::PACK),
            Ok(s) if s.active() == Slot::A && matches!(s.refused(), Some((Slot::B, _)))
        );
        copy[i] ^= 0xff;
        if !fell_back {
            report.fail("damaged-newer-slot-used", None);
        }
        flips += 1;
    }
    report.measured("flips_fallen_back", flips);
    report.measured("pack_bytes", length as u64);
    // The model runs from the fallback, with the newer slot's weight byte still damaged.
    copy[weight] ^= 0xff;
    let Ok(mut source) = Slots::open(a, &copy[..], &digits_slots::PACK) else { report.fail("fallback", None) };
    if source.active() != Slot::A {
        report.fail("fallback", None);
    }
    let Some(mut model) = digits_slots::Model::take() else { report.fail("take", None) };
    let Some(first) = decode::<f32, 64>(CASES[0].inputs[0]) else { report.fail("input-size", None) };
    // The first run reads every parameter (lazily); the cases then read nothing.
    let (out, cost) = measure(|| model.run(&digits_slots::Inputs { pixels: &first }, &mut source).map(drop));
    if let Err(e) = out {
        report.fail("first-run", Some(&e));
    }
    report.first_run(&cost);
    for case in &CASES {
        let Some(pixels) = decode::<f32, 64>(case.inputs[0]) else { report.fail("input-size", None) };
        let (out, cost) = measure(|| model.run(&digits_slots::Inputs { pixels: &pixels }, &mut source));
        let out = match out {
            Ok(out) => out,
            Err(e) => report.fail("run", Some(&e)),
        };
        report.case(compare(out.output, case.outputs[0], TOLERANCE), false, &cost);
    }
    report.stated_stack(digits_slots::STACK_BYTES);
    report.finish()
}

/// The bytes of the pack at the start of `copy` that its header covers, if they fit the copy.
fn digits_slots_length(copy: &[u8]) -> Option<usize> {
    let h = PackHeader::of(copy).ok()??;
    usize::try_from(h.length).ok().filter(|&l| l < copy.len() && l > 1024 + 700)
}
