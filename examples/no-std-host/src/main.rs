//! A `#![no_std]`, `#![no_main]` host program: the C runtime calls `main`, which runs the digits
//! model on one image and prints the prediction. No std, no alloc, no heap: the model's memory is
//! a static arena and its weights are in the program image.
#![no_std]
#![no_main]

mlf_runtime::include_model!("../digits/model/digits.tar");

unsafe extern "C" {
    /// POSIX `write` from the C library the program links.
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    /// C `abort`: ends the process (with SIGABRT), so a panic does not hang the test running it.
    safe fn abort() -> !;
}

fn print(s: &[u8]) {
    // SAFETY: `s` is a valid buffer of `s.len()` bytes; fd 1 is standard output.
    unsafe { write(1, s.as_ptr(), s.len()) };
}

/// The first labelled digit of `model/vectors` (a 2).
static PIXELS: [u8; 256] = *include_bytes!("../../digits/model/vectors/case0_in_pixels.bin");

#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    let pixels: [f32; 64] = core::array::from_fn(|i| f32::from_le_bytes([PIXELS[4 * i], PIXELS[4 * i + 1], PIXELS[4 * i + 2], PIXELS[4 * i + 3]]));
    let Some(mut model) = digits::Model::take() else { return 2 };
    let Ok(out) = model.run(&digits::Inputs { pixels: &pixels }) else { return 3 };
    let best = (0..10).fold(0, |b, k| if out.output[k] > out.output[b] { k } else { b });
    print(b"no_std digits: predicted ");
    print(&[b'0' + best as u8, b'\n']);
    if best == 2 { 0 } else { 1 }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    print(b"panic\n");
    abort()
}

/// The host's precompiled `core` refers to the unwinding personality routine; with
/// `panic = "abort"` nothing unwinds, so it is never called.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
