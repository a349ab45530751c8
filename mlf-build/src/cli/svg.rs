//! A picture of a model's static memory plan, as SVG: every arena buffer is a box spanning the
//! operators during which it is live (x) and the bytes it occupies (y), named after its tensor
//! (the operator that writes it) or the operator whose scratch it is, tensors in a colour each,
//! operator scratch in one colour; the axis has round ticks; the peak of live bytes is marked;
//! the stack one run needs stands beside it at the same scale (once the C is compiled), the
//! parameters in flash beside that as one stacked bar. Each box carries a tooltip
//! (`<title>`) saying in words what it holds, where, how big and while which operators run.

use svg::Document;
use svg::node::element::{Group, Line, Rectangle, Text, Title};

use crate::backend::{self, BoxKind, Picture};
use crate::error::Result;
use crate::model::ModelDesc;
use crate::support::names;
use crate::support::size::human;

/// The fill colour of a box of `kind` (tensors take the hue `tensor_hue`, in degrees).
fn fill(kind: BoxKind, tensor_hue: usize) -> String {
    match kind {
        BoxKind::Scratch => "#f4a261".to_string(),
        BoxKind::CPool => "#adb5bd".to_string(),
        BoxKind::Tensor => format!("hsl({tensor_hue}, 55%, 72%)"),
    }
}

/// The hue of the `i`-th box.
fn hue(i: usize) -> usize {
    (i * 47) % 360
}

/// A legend swatch of `kind` at `x`, its baseline at `y`: tensors show four of their colours.
fn swatch(x: f64, y: f64, kind: BoxKind) -> Group {
    let rect = |dx: f64, w: f64, fill: String| {
        Rectangle::new().set("x", x + dx).set("y", y - 10.0).set("width", w).set("height", 10).set("fill", fill)
    };
    let mut g = Group::new();
    if kind == BoxKind::Tensor {
        for k in 0..4 {
            g = g.add(rect(k as f64 * 5.0, 5.0, fill(kind, hue(k))));
        }
        g.add(rect(0.0, 20.0, "none".into()).set("stroke", "#1d3557"))
    } else {
        g.add(rect(0.0, 20.0, fill(kind, 0)).set("stroke", "#1d3557"))
    }
}

/// The step between round ticks for an axis up to `top` bytes (1, 2 or 5 × a power of ten of
/// bytes, KiB or MiB; at most six steps), and the unit: (step, unit bytes, unit name).
fn tick_step(top: u64) -> (u64, u64, &'static str) {
    let (unit, unit_name) = match top {
        t if t >= 4 << 20 => (1u64 << 20, "MiB"),
        t if t >= 4 << 10 => (1 << 10, "KiB"),
        _ => (1, "B"),
    };
    let in_units = top.div_ceil(unit).max(1);
    let mut power = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = m * power;
            if in_units / step <= 6 {
                return (step * unit, unit, unit_name);
            }
        }
        power = power.saturating_mul(10);
    }
}

/// Width and height of the picture.
const W: f64 = 1100.0;
const H: f64 = 640.0;
/// The font of every text.
const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// Where things go: the plot area, the width of a column, the bytes the y axis spans.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    cw: f64,
    top_bytes: u64,
}

impl Frame {
    fn of(p: &Picture) -> Frame {
        let (x0, x1, y0, y1) = (90.0, W - 290.0, 70.0, H - 90.0);
        let cols = p.columns.len().max(1) as f64;
        let top_bytes = p.boxes.iter().map(|b| b.offset + b.size).max().unwrap_or(0).max(p.arena);
        Frame { x0, x1, y0, y1, cw: (x1 - x0) / cols, top_bytes }
    }

    /// The y of arena offset `off`.
    fn y_of(&self, off: u64) -> f64 {
        let arena = self.top_bytes.max(1) as f64;
        self.y1 - (off as f64 / arena) * (self.y1 - self.y0)
    }

    /// A text at (`x`, `y`).
    fn text(&self, x: f64, y: f64, size: f64, s: &str) -> Text {
        Text::new(s).set("x", r(x)).set("y", r(y)).set("font-size", size).set("font-family", FONT)
    }
}

impl Picture {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let g = Frame::of(self);
        let title_size = if self.title.chars().count() > 95 { 13.0 } else { 16.0 };
        let caption =
            "static RAM: each box is one buffer, live from its first to its last operator (x), at its arena offset (y)";
        let (axes, labels) = axes(self, &g);
        let (boxes, box_labels) = boxes(self, &g);
        let doc = Document::new()
            .set("viewBox", (0, 0, W, H))
            .set("width", W)
            .set("height", H)
            .add(Rectangle::new().set("width", "100%").set("height", "100%").set("fill", "white"))
            .add(g.text(g.x0, 28.0, title_size, &self.title).set("font-weight", "bold"))
            .add(g.text(g.x0, 50.0, 12.0, caption).set("fill", "#555"))
            .add(axes)
            .add(labels)
            .add(boxes)
            .add(box_labels)
            .add(marks(self, &g))
            .add(legend(self, &g))
            .add(flash(self, &g));
        match stack(self, &g) {
            Some(stack) => doc.add(stack).to_string(),
            None => doc.to_string(),
        }
    }
}

/// The axes with their ticks, and their labels.
fn axes(p: &Picture, g: &Frame) -> (Group, Group) {
    let mut axes = Group::new().set("stroke", "#333").set("stroke-width", 1);
    axes = axes.add(line(g.x0, g.y1, g.x1, g.y1)).add(line(g.x0, g.y0, g.x0, g.y1));
    let mut labels = Group::new().set("font-family", FONT).set("font-size", 11).set("fill", "#333");
    let (step, unit, unit_name) = tick_step(g.top_bytes);
    for k in 0..=g.top_bytes / step {
        let off = k * step;
        let y = g.y_of(off);
        axes = axes.add(line(g.x0 - 5.0, y, g.x0, y));
        let label = format!("{} {unit_name}", off / unit);
        labels = labels.add(Text::new(label).set("x", r(g.x0 - 8.0)).set("y", r(y + 4.0)).set("text-anchor", "end"));
    }
    let step = (p.columns.len() / 20).max(1);
    for c in (0..p.columns.len()).step_by(step) {
        let x = g.x0 + (c as f64 + 0.5) * g.cw;
        axes = axes.add(line(x, g.y1, x, g.y1 + 5.0));
        labels =
            labels.add(Text::new(c.to_string()).set("x", r(x)).set("y", r(g.y1 + 18.0)).set("text-anchor", "middle"));
    }
    labels = labels
        .add(
            Text::new("operator call")
                .set("x", r((g.x0 + g.x1) / 2.0))
                .set("y", r(g.y1 + 36.0))
                .set("text-anchor", "middle"),
        )
        .add(
            Text::new("offset (bytes)")
                .set("x", 0)
                .set("y", 0)
                .set("text-anchor", "middle")
                .set("transform", format!("translate(22 {}) rotate(-90)", r((g.y0 + g.y1) / 2.0))),
        );

    (axes, labels)
}

/// A box per buffer (with its tooltip), and the names and sizes that fit inside them.
fn boxes(p: &Picture, g: &Frame) -> (Group, Group) {
    let mut boxes = Group::new().set("stroke", "#1d3557").set("stroke-width", 0.6);
    let mut box_labels =
        Group::new().set("font-family", FONT).set("font-size", 10).set("fill", "#111").set("text-anchor", "middle");
    for (i, b) in p.boxes.iter().enumerate() {
        let (bx0, bx1) = (g.x0 + b.first as f64 * g.cw, g.x0 + (b.last + 1) as f64 * g.cw);
        let (top, bottom) = (g.y_of(b.offset + b.size), g.y_of(b.offset));
        let h = (bottom - top).max(1.0);
        boxes = boxes.add(
            Rectangle::new()
                .set("x", r(bx0))
                .set("y", r(bottom - h))
                .set("width", r((bx1 - bx0).max(1.0)))
                .set("height", r(h))
                .set("fill", fill(b.kind, hue(i)))
                .set("fill-opacity", 0.9)
                .add(Title::new(tooltip(p, b))),
        );
        // About 5.8 px per character at 10 px.
        let fits = ((bx1 - bx0 - 6.0) / 5.8).max(0.0) as usize;
        let (cx, cy) = (r((bx0 + bx1) / 2.0), bottom - h / 2.0);
        let size = human(b.size);
        if fits >= 6 && h >= 26.0 {
            box_labels = box_labels
                .add(Text::new(abbreviate(&b.name, fits)).set("x", cx).set("y", r(cy - 2.0)))
                .add(Text::new(size).set("x", cx).set("y", r(cy + 10.0)));
        } else if fits >= 6 && h >= 12.0 {
            let both = format!("{} · {size}", b.name);
            let text = if both.chars().count() <= fits { both } else { abbreviate(&b.name, fits) };
            box_labels = box_labels.add(Text::new(text).set("x", cx).set("y", r(cy + 3.5)));
        }
    }

    (boxes, box_labels)
}

/// What a box holds, in words: its description, size, place and the operators it lives over.
fn tooltip(p: &Picture, b: &crate::backend::PlanBox) -> String {
    let call = |c: usize| match p.columns.get(c) {
        Some(f) => format!("call {c} ({})", names::operator(f)),
        None => format!("call {c}"),
    };
    let when = if b.kind == BoxKind::CPool {
        "for the whole run".to_string()
    } else if b.first == b.last {
        format!("live during {}", call(b.first))
    } else {
        format!("live from {} to {}", call(b.first), call(b.last))
    };
    format!("{}: {} bytes at arena offset {}, {when}", b.label, b.size, b.offset)
}

/// The arena's size and the column where live bytes peak.
fn marks(p: &Picture, g: &Frame) -> Group {
    let (pc, pbytes) = p.peak();
    let px = g.x0 + (pc as f64 + 0.5) * g.cw;
    Group::new()
        .add(
            line(g.x0, g.y_of(p.arena), g.x1, g.y_of(p.arena))
                .set("stroke", "#c1121f")
                .set("stroke-width", 1.2)
                .set("stroke-dasharray", "6 4"),
        )
        .add(
            g.text(g.x1, g.y_of(p.arena) - 6.0, 11.0, &format!("arena: {} bytes", p.arena))
                .set("text-anchor", "end")
                .set("fill", "#c1121f"),
        )
        .add(line(px, g.y0, px, g.y1).set("stroke", "#c1121f").set("stroke-width", 1.5).set("stroke-dasharray", "3 3"))
        .add(
            // From the plot's left edge, where the whole line fits.
            g.text(
                g.x0,
                g.y1 + 54.0,
                12.0,
                &format!(
                    "peak: {pbytes} bytes live at call {pc} ({})",
                    short(names::operator(p.columns.get(pc).map(String::as_str).unwrap_or("")), 80)
                ),
            )
            .set("fill", "#c1121f")
            .set("font-weight", "bold"),
        )
}

/// What the colours and marks mean: only what the picture uses.
fn legend(p: &Picture, g: &Frame) -> Group {
    let ly = H - 14.0;
    let has = |k: BoxKind| p.boxes.iter().any(|b| b.kind == k);
    // (a box kind, or the dash pattern of a red line), text, width of the item.
    let mut items: Vec<(Result<BoxKind, &str>, &str, f64)> = Vec::new();
    if has(BoxKind::Tensor) {
        items.push((Ok(BoxKind::Tensor), "tensor (a colour each)", 170.0));
    }
    if has(BoxKind::Scratch) {
        items.push((Ok(BoxKind::Scratch), "operator scratch (TVMBackendAllocWorkspace)", 310.0));
    }
    if has(BoxKind::CPool) {
        items.push((Ok(BoxKind::CPool), "static RAM inside the C", 170.0));
    }
    items.push((Err("6 4"), "arena size", 100.0));
    items.push((Err("3 3"), "peak of live bytes", 0.0));
    let mut legend = Group::new();
    let mut x = g.x0;
    for (mark, text, width) in items {
        let mark = match mark {
            Ok(kind) => swatch(x, ly, kind),
            Err(dash) => Group::new().add(
                line(x, ly - 5.0, x + 20.0, ly - 5.0)
                    .set("stroke", "#c1121f")
                    .set("stroke-dasharray", dash)
                    .set("stroke-width", 1.5),
            ),
        };
        legend = legend.add(mark).add(g.text(x + 26.0, ly, 11.0, text));
        x += width;
    }
    legend
}

/// Where the stack bar stands: right of the arena.
const STACK_X: f64 = 14.0;

/// The stack one run needs, beside the arena at the arena's byte scale (RAM as well, but not
/// part of the arena): C frames, mlf's frames and the allowances, with the figure above it.
fn stack(p: &Picture, g: &Frame) -> Option<Group> {
    let (x, w) = (g.x1 + STACK_X, 30.0);
    // Not known before the C is compiled (`cargo mlf plan` says so in words).
    let s = p.stack.as_ref()?;
    let mut group = Group::new()
        .add(g.text(x, g.y0 - 24.0, 12.0, "stack").set("font-weight", "bold"))
        .add(g.text(x, g.y0 - 8.0, 11.0, &format!("{} B", s.total)).set("fill", "#555"));
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
        ("mlf", s.runtime, "#2a9d8f", "mlf's own frames (run(), the runtime), optimised builds".to_string()),
    ];
    let top = s.total.min(g.top_bytes.max(1));
    let scale = (g.y1 - g.y_of(top)) / s.total.max(1) as f64;
    let mut y = g.y1;
    for (name, bytes, colour, about) in parts {
        if bytes == 0 {
            continue;
        }
        let h = bytes as f64 * scale;
        group = group.add(
            Rectangle::new()
                .set("x", r(x))
                .set("y", r(y - h))
                .set("width", w)
                .set("height", r(h.max(0.5)))
                .set("fill", colour)
                .set("stroke", "#333")
                .set("stroke-width", 0.4)
                .add(Title::new(format!("stack, {name}: {bytes} bytes ({about})"))),
        );
        y -= h;
    }
    let bound = if s.bounded { "" } else { " (not a bound)" };
    let caption = if s.total > g.top_bytes {
        format!("{} B{bound}: taller than the arena", s.total)
    } else {
        bound.trim().to_string()
    };
    if !caption.is_empty() {
        group = group.add(g.text(x, y - 6.0, 10.0, &caption).set("fill", "#b00"));
    }
    Some(group)
}

/// The flash beside the arena: one bar of the parameters or constants, stacked.
fn flash(p: &Picture, g: &Frame) -> Group {
    let fx0 = g.x1 + 70.0;
    let fw = 60.0;
    let total: u64 = p.flash.iter().map(|(_, b)| *b).sum();
    let mut flash = Group::new().add(g.text(fx0, g.y0 - 24.0, 12.0, &p.flash_caption).set("font-weight", "bold")).add(
        g.text(fx0, g.y0 - 8.0, 11.0, &format!("{} bytes in {} arrays", total, p.flash.len())).set("fill", "#555"),
    );
    if total > 0 {
        let scale = (g.y1 - g.y0) / total as f64;
        let mut y = g.y1;
        let big: Vec<usize> = {
            let mut idx: Vec<usize> = (0..p.flash.len()).collect();
            idx.sort_by_key(|&i| std::cmp::Reverse(p.flash[i].1));
            idx.into_iter().take(8).collect()
        };
        for (i, (name, bytes)) in p.flash.iter().enumerate() {
            let h = *bytes as f64 * scale;
            let shade = if i % 2 == 0 { "#8ecae6" } else { "#219ebc" };
            flash = flash.add(
                Rectangle::new()
                    .set("x", fx0)
                    .set("y", r(y - h))
                    .set("width", fw)
                    .set("height", r(h.max(0.5)))
                    .set("fill", shade)
                    .set("stroke", "#023047")
                    .set("stroke-width", 0.4)
                    .add(Title::new(format!("{name}: {bytes} bytes ({})", p.flash_caption))),
            );
            if h >= 11.0 && big.contains(&i) {
                flash = flash.add(g.text(
                    fx0 + fw + 6.0,
                    y - h / 2.0 + 4.0,
                    10.0,
                    &format!("{} {}", short(name, 14), human(*bytes)),
                ));
            }
            y -= h;
        }
    } else {
        flash = flash.add(g.text(fx0, (g.y0 + g.y1) / 2.0, 11.0, "none"));
    }
    flash
}

fn line(xa: f64, ya: f64, xb: f64, yb: f64) -> Line {
    Line::new().set("x1", r(xa)).set("y1", r(ya)).set("x2", r(xb)).set("y2", r(yb)).set("stroke", "#333")
}

/// Rounds to 0.1 px (keeps the document small and deterministic).
fn r(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A box's name in at most `max` characters, keeping what tells boxes apart: a prefix such as
/// `scratch of ` becomes `scratch: `, and a long operator name keeps its first words and its
/// numeric suffix (`nn_conv2d_add_fixed_point_multiply_clip_1` → `conv2d_add…_1`).
fn abbreviate(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        return name.to_string();
    }
    let (prefix, op) = match name.rsplit_once(": ") {
        Some((p, op)) => (format!("{p}: "), op),
        None => match name.strip_prefix("scratch of ") {
            Some(op) => ("scratch: ".to_string(), op),
            None => (String::new(), name),
        },
    };
    let words: Vec<&str> = op.split('_').filter(|w| !matches!(*w, "nn" | "contrib" | "")).collect();
    let suffix = words.last().filter(|w| words.len() > 1 && w.chars().all(|c| c.is_ascii_digit()));
    let tail = suffix.map(|s| format!("…_{s}")).unwrap_or_else(|| "…".to_string());
    let budget = max.saturating_sub(prefix.chars().count() + tail.chars().count());
    let mut head = String::new();
    for w in &words {
        let next = if head.is_empty() { w.to_string() } else { format!("{head}_{w}") };
        if next.chars().count() > budget {
            break;
        }
        head = next;
    }
    if head.chars().count() < 4 {
        // No room for the operator: the prefix alone (`scratch`) says more than a cut name.
        let bare = prefix.trim_end_matches(": ");
        return if bare.is_empty() { short(name, max) } else { short(bare, max) };
    }
    short(&format!("{prefix}{head}{tail}"), max)
}

/// `name`, cut to `max` characters with an ellipsis.
fn short(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(max - 1).collect::<String>())
    }
}

/// The SVG picture of `desc`'s static memory plan (see [`Picture`]); `name` is the model's
/// module name, shown in the title.
pub fn plan_svg(desc: &ModelDesc, name: &str) -> Result<String> {
    Ok(picture(desc, name)?.to_svg())
}

/// The picture of `desc`'s memory plan, planned as the build plans it (`name`: the module name,
/// shown in the title). Kmodels are not planned at build time: an error says so.
pub fn picture(desc: &ModelDesc, name: &str) -> Result<Picture> {
    backend::of(desc).picture(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::PlanBox;

    #[test]
    fn peak_is_the_column_with_most_live_bytes() {
        let b = |offset, size, first, last| PlanBox {
            name: String::new(),
            label: String::new(),
            offset,
            size,
            first,
            last,
            kind: BoxKind::Tensor,
        };
        let p = Picture {
            columns: vec!["a".into(), "b".into(), "c".into()],
            boxes: vec![b(0, 10, 0, 1), b(16, 20, 1, 2), b(0, 5, 2, 2)],
            arena: 48,
            ..Picture::default()
        };
        assert_eq!(p.peak(), (1, 30));
        let svg = p.to_svg();
        assert!(svg.starts_with("<svg") && svg.contains("peak: 30 bytes live at call 1 (b)"), "{svg}");
    }

    #[test]
    fn the_stack_stands_beside_the_arena_once_known() {
        let p = Picture { columns: vec!["a".into()], arena: 4096, ..Picture::default() };
        assert!(!p.to_svg().contains("stack, "), "no stack bar before the C is compiled");
        let figure = crate::plan::stack::StackFigure {
            total: 1000,
            runtime: 512,
            c: 232,
            leaf: 256,
            deepest: "main (40) → conv (192)".into(),
            bounded: true,
            ..Default::default()
        };
        let svg = p.with_stack(Some(figure)).to_svg();
        assert!(svg.contains("1000 B"), "{svg}");
        assert!(
            svg.contains("stack, C frames: 232 bytes (the model's C, deepest chain: main (40) → conv (192))"),
            "{svg}"
        );
        assert!(svg.contains("stack, mlf: 512 bytes") && svg.contains("stack, leaf: 256 bytes"), "{svg}");
        assert!(!svg.contains("stack, source"), "no parameter source in an embedded run: {svg}");
    }

    #[test]
    fn names_keep_what_tells_boxes_apart() {
        let op = "nn_conv2d_add_fixed_point_multiply_per_axis_add_clip_cast_cast_subtract_1";
        assert_eq!(abbreviate(op, 16), "conv2d_add…_1");
        assert_eq!(abbreviate(&format!("scratch of {op}"), 18), "scratch: conv2d…_1");
        assert_eq!(abbreviate("model output 0: softmax", 40), "model output 0: softmax");
        assert_eq!(abbreviate("dense_add", 5), "dens…");
        assert_eq!(abbreviate(&format!("scratch of {op}"), 14), "scratch");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(88192), (20 << 10, 1 << 10, "KiB"));
        assert_eq!(tick_step(176), (50, 1, "B"));
        assert_eq!(tick_step(3_377_604), (500 << 10, 1 << 10, "KiB"));
        assert_eq!(tick_step(40 << 20), (10 << 20, 1 << 20, "MiB"));
    }
}
