//! The bars beside the arena: the stack one run needs (once the C is compiled), on a scale of
//! its own with each part named and counted, and the parameters in flash, stacked, the largest
//! named whole.

use svg::node::element::{Group, Rectangle, Title};

use super::frame::{Frame, W, fit, r};
use crate::backend::Picture;
use crate::support::size::human;

/// Where the stack bar stands (right of the arena) and how wide it is.
const STACK_X: f64 = 20.0;
const STACK_W: f64 = 28.0;
/// Where the flash bar stands, and how wide it is.
const FLASH_X: f64 = 230.0;
const FLASH_W: f64 = 50.0;

/// Label rows at least this far apart.
const ROW: f64 = 11.0;

/// The stack one run needs: the whole plot's height is its figure (a scale of its own: the
/// stack is RAM but not part of the arena), stacked C frames, allowances and mlf's frames, each
/// named with its bytes beside the bar.
pub fn stack(p: &Picture, g: &Frame) -> Option<Group> {
    let x = g.x1 + STACK_X;
    // Not known before the C is compiled (`cargo mlf plan` says so in words).
    let s = p.stack.as_ref()?;
    let bound = if s.bounded { "" } else { " (not a bound)" };
    let profile = if s.debug { "with debug assertions (dev profile)" } else { "optimised builds" };
    let mut group = Group::new()
        .add(g.text(x, g.y0 - 24.0, 12.0, &format!("stack: {} bytes{bound}", s.total)).set("font-weight", "bold"))
        .add(g.text(x, g.y0 - 8.0, 10.0, "to scale: the bar is the whole figure").set("fill", "#555"));
    let parts = [
        (
            "C frames",
            s.c,
            "#e76f51",
            format!("the model's C, deepest chain: {}", if s.deepest.is_empty() { "none" } else { &s.deepest }),
        ),
        (
            "leaf",
            s.leaf,
            "#f4a261",
            "allowance for one function outside the C (workspace allocator, expf, memcpy)".to_string(),
        ),
        (
            "source",
            s.source,
            "#e9c46a",
            "allowance for the parameter source a streamed or lazy run reads through".to_string(),
        ),
        ("mlf", s.runtime, "#2a9d8f", format!("mlf's own frames (run(), the runtime), {profile}")),
    ];
    let scale = (g.y1 - g.y0) / s.total.max(1) as f64;
    let (mut y, mut label_y) = (g.y1, f64::INFINITY);
    for (name, bytes, colour, about) in parts {
        if bytes == 0 {
            continue;
        }
        let h = bytes as f64 * scale;
        group = group.add(
            Rectangle::new()
                .set("x", r(x))
                .set("y", r(y - h))
                .set("width", STACK_W)
                .set("height", r(h.max(0.5)))
                .set("fill", colour)
                .set("stroke", "#333")
                .set("stroke-width", 0.4)
                .add(Title::new(format!("stack, {name}: {bytes} bytes ({about})"))),
        );
        // Beside its part, below the label above it when the part is thin.
        let ly = (y - h / 2.0 + 3.5).min(label_y - ROW);
        group = group.add(g.text(x + STACK_W + 6.0, ly, 10.0, &format!("{name} {bytes} B")));
        label_y = ly;
        y -= h;
    }
    Some(group)
}

/// The flash beside the arena: one bar of the parameters or constants, stacked; the largest
/// named whole beside it (every one on hover).
pub fn flash(p: &Picture, g: &Frame) -> Group {
    let fx0 = g.x1 + FLASH_X;
    let total: u64 = p.flash.iter().map(|(_, b)| *b).sum();
    let mut flash = Group::new().add(g.text(fx0, g.y0 - 24.0, 12.0, &p.flash_caption).set("font-weight", "bold")).add(
        g.text(
            fx0,
            g.y0 - 8.0,
            11.0,
            &format!("{} bytes in {} array{}", total, p.flash.len(), if p.flash.len() == 1 { "" } else { "s" }),
        )
        .set("fill", "#555"),
    );
    if total == 0 {
        return flash.add(g.text(fx0, (g.y0 + g.y1) / 2.0, 11.0, "none"));
    }
    let scale = (g.y1 - g.y0) / total as f64;
    let big: Vec<usize> = {
        let mut idx: Vec<usize> = (0..p.flash.len()).collect();
        idx.sort_by_key(|&i| std::cmp::Reverse(p.flash[i].1));
        idx.into_iter().take(12).collect()
    };
    let label_x = fx0 + FLASH_W + 6.0;
    let (mut y, mut label_y) = (g.y1, f64::INFINITY);
    for (i, (name, bytes)) in p.flash.iter().enumerate() {
        let h = *bytes as f64 * scale;
        let shade = if i % 2 == 0 { "#8ecae6" } else { "#219ebc" };
        flash = flash.add(
            Rectangle::new()
                .set("x", fx0)
                .set("y", r(y - h))
                .set("width", FLASH_W)
                .set("height", r(h.max(0.5)))
                .set("fill", shade)
                .set("stroke", "#023047")
                .set("stroke-width", 0.4)
                .add(Title::new(format!("{name}: {bytes} bytes ({})", p.flash_caption))),
        );
        if h >= 9.0 && big.contains(&i) {
            let text = format!("{name} · {}", human(*bytes));
            if let Some((size, lines)) = fit(&text, W - label_x - 8.0, 10.0, 7.0, 2) {
                let extra = (lines.len() - 1) as f64 * size * 1.1;
                let top = (y - h / 2.0 + 3.5 - extra / 2.0).min(label_y - ROW - extra);
                if top - ROW * 0.5 > g.y0 - 4.0 {
                    for (k, l) in lines.iter().enumerate() {
                        flash = flash.add(g.text(label_x, top + k as f64 * size * 1.1, size, l));
                    }
                    label_y = top;
                }
            }
        }
        y -= h;
    }
    flash
}
