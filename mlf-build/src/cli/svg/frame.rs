//! What every part of the picture shares: its size, where the plot stands, the byte scale of
//! the y axis, rounding, lines, and text that fits a width without being cut (a smaller font,
//! or lines broken between words, or nothing: the tooltip still says it).

use svg::node::element::{Line, Text};

/// Width and height of the picture.
pub const W: f64 = 1400.0;
pub const H: f64 = 880.0;
/// The font of every text.
pub const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
/// The average width of a character, as a fraction of the font size (DejaVu Sans).
const CHAR_WIDTH: f64 = 0.58;

/// Where things go: the plot area, the width of a column, the bytes the y axis spans.
pub struct Frame {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    pub cw: f64,
    pub top_bytes: u64,
}

impl Frame {
    /// The frame of a picture with `columns` operator calls and buffers up to `top_bytes`.
    pub fn new(columns: usize, top_bytes: u64) -> Frame {
        let (x0, x1, y0, y1) = (90.0, W - 560.0, 70.0, H - 306.0);
        let cols = columns.max(1) as f64;
        Frame { x0, x1, y0, y1, cw: (x1 - x0) / cols, top_bytes }
    }

    /// The y of arena offset `off`.
    pub fn y_of(&self, off: u64) -> f64 {
        let arena = self.top_bytes.max(1) as f64;
        self.y1 - (off as f64 / arena) * (self.y1 - self.y0)
    }

    /// The x of the middle of column `c`.
    pub fn x_mid(&self, c: usize) -> f64 {
        self.x0 + (c as f64 + 0.5) * self.cw
    }

    /// A text at (`x`, `y`).
    pub fn text(&self, x: f64, y: f64, size: f64, s: &str) -> Text {
        Text::new(s).set("x", r(x)).set("y", r(y)).set("font-size", size).set("font-family", FONT)
    }
}

/// A line from (`xa`, `ya`) to (`xb`, `yb`).
pub fn line(xa: f64, ya: f64, xb: f64, yb: f64) -> Line {
    Line::new().set("x1", r(xa)).set("y1", r(ya)).set("x2", r(xb)).set("y2", r(yb)).set("stroke", "#333")
}

/// Rounds to 0.1 px (keeps the document small and deterministic).
pub fn r(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The width of `text` at `size` px.
pub fn width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * CHAR_WIDTH
}

/// `text` whole in at most `max_lines` lines of at most `max_width` px: the largest font from
/// `largest` down to `smallest` (in half pixels) at which it fits, on one line if it can, else
/// broken after `_`, spaces or `,`. `None` when it fits in no way: the caller leaves it out
/// (never cut).
pub fn fit(text: &str, max_width: f64, largest: f64, smallest: f64, max_lines: usize) -> Option<(f64, Vec<String>)> {
    let mut size = largest;
    while size >= smallest {
        if width(text, size) <= max_width {
            return Some((size, vec![text.to_string()]));
        }
        size -= 0.5;
    }
    if max_lines < 2 {
        return None;
    }
    // Broken between words at the smallest size.
    let per_line = (max_width / (smallest * CHAR_WIDTH)).floor() as usize;
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for piece in text.split_inclusive(['_', ' ', ',']) {
        if !current.is_empty() && current.chars().count() + piece.chars().count() > per_line {
            lines.push(std::mem::take(&mut current));
        }
        current.push_str(piece);
    }
    lines.push(current);
    let fits = lines.len() <= max_lines && lines.iter().all(|l| l.chars().count() <= per_line);
    fits.then(|| (smallest, lines.into_iter().map(|l| l.trim_end().to_string()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fits_whole_or_not_at_all() {
        assert_eq!(fit("conv2d", 100.0, 10.0, 7.0, 1), Some((10.0, vec!["conv2d".to_string()])));
        // Smaller before broken.
        let (size, lines) = fit("nn_conv2d_add_fixed_point", 110.0, 10.0, 7.0, 2).unwrap();
        assert!(size < 10.0 && lines.len() == 1, "{size} {lines:?}");
        let long = "nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract_1";
        let (size, lines) = fit(long, 150.0, 10.0, 7.0, 3).unwrap();
        assert_eq!((size, lines.concat()), (7.0, long.to_string()), "broken, nothing dropped");
        assert!(lines.iter().all(|l| width(l, size) <= 150.0), "{lines:?}");
        assert_eq!(fit(long, 60.0, 10.0, 7.0, 2), None, "left out rather than cut");
    }
}
