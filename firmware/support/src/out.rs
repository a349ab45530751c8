//! Output through semihosting without `core::fmt`: a line is built in a fixed buffer from text
//! and numbers and written to the host's standard output in one call.

use semihosting::io::Write;

/// A line of at most 512 bytes (longer text is cut).
pub struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line::new()
    }
}

impl Line {
    /// An empty line.
    pub const fn new() -> Line {
        Line { buf: [0; 512], len: 0 }
    }

    /// Appends text.
    pub fn text(&mut self, s: &str) -> &mut Line {
        for &b in s.as_bytes() {
            if self.len == self.buf.len() {
                break;
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        self
    }

    /// Appends a number in decimal.
    pub fn number(&mut self, mut n: u64) -> &mut Line {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // Digits are ASCII.
        self.text(core::str::from_utf8(&digits[i..]).unwrap_or("?"))
    }

    /// Appends ` key=value`.
    pub fn field(&mut self, key: &str, value: &str) -> &mut Line {
        self.text(" ").text(key).text("=").text(value)
    }

    /// Appends ` key=<number>`.
    pub fn count(&mut self, key: &str, n: u64) -> &mut Line {
        self.text(" ").text(key).text("=").number(n)
    }

    /// Writes the line and a newline to the host's standard output.
    pub fn print(&mut self) {
        self.text("\n");
        if let Ok(mut out) = semihosting::io::stdout() {
            let _ = out.write_all(&self.buf[..self.len]);
        }
    }
}

/// Ends the program: QEMU exits with status 0 for `code == 0`, non-zero otherwise.
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}
