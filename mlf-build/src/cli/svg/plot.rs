//! The plot of the arena: axes (round byte ticks; every operator call named under its column,
//! rotated, and on hover), a box per buffer with its name and size where they fit whole, marks
//! where the C puts tensors in a USMP pool, the arena's size and the peak, and a legend of what
//! is drawn.

use svg::node::element::{Group, Rectangle, Text, Title};

use super::frame::{FONT, Frame, fit, line, r, width};
use crate::backend::{BoxKind, Picture, PlanBox};
use crate::support::names;
use crate::support::size::human;

/// The fill colour of a box of `kind` (tensors take the hue `tensor_hue`, in degrees).
pub fn fill(kind: BoxKind, tensor_hue: usize) -> String {
    match kind {
        BoxKind::Scratch => "#f4a261".to_string(),
        BoxKind::CPool => "#dee2e6".to_string(),
        BoxKind::Tensor | BoxKind::PoolItem => format!("hsl({tensor_hue}, 55%, 62%)"),
    }
}

/// The hue of the `i`-th box.
fn hue(i: usize) -> usize {
    (i * 47) % 360
}

/// The step between round ticks for an axis up to `top` bytes (1, 2 or 5 × a power of ten of
/// bytes, KiB or MiB; at most six steps), and the unit: (step, unit bytes, unit name).
pub fn tick_step(top: u64) -> (u64, u64, &'static str) {
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

/// How far below the axis the operator names reach (rotated by 60°).
const NAMES_DEPTH: f64 = 240.0;
/// Their rotation.
const ANGLE: f64 = -60.0;

/// The axes with their ticks, the operator names, and the axis captions.
pub fn axes(p: &Picture, g: &Frame) -> (Group, Group) {
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
    // Every column is named on hover; as many as have room are named under the axis.
    let every = ((11.0 / g.cw).ceil() as usize).max(1);
    let length = NAMES_DEPTH / (-ANGLE).to_radians().sin();
    for (c, func) in p.columns.iter().enumerate() {
        let x = g.x_mid(c);
        let name = format!("{c}: {}", names::operator(func));
        axes = axes.add(line(x, g.y1, x, g.y1 + 5.0));
        labels = labels.add(
            Rectangle::new()
                .set("x", r(x - g.cw / 2.0))
                .set("y", r(g.y1 + 1.0))
                .set("width", r(g.cw))
                .set("height", 12)
                .set("fill", "transparent")
                .add(Title::new(format!("call {c}: {func}"))),
        );
        if c % every != 0 {
            continue;
        }
        let lines = fit(&name, length, 9.0, 7.0, 2).unwrap_or_else(|| (7.0, vec![c.to_string()]));
        let (size, lines) = lines;
        for (k, text) in lines.iter().enumerate() {
            // Lines side by side across the slant, centred on the tick.
            let shift = (k as f64 - (lines.len() - 1) as f64 / 2.0) * size * 1.1;
            let (lx, ly) = (x + shift * 0.866, g.y1 + 10.0 + shift * 0.5);
            labels = labels.add(
                Text::new(text.as_str())
                    .set("x", r(lx))
                    .set("y", r(ly))
                    .set("font-size", size)
                    .set("text-anchor", "end")
                    .set("transform", format!("rotate({ANGLE} {} {})", r(lx), r(ly))),
            );
        }
    }
    labels = labels
        .add(
            Text::new("operator call (number: operator)")
                .set("x", r((g.x0 + g.x1) / 2.0))
                .set("y", r(g.y1 + NAMES_DEPTH + 18.0))
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

/// A box per buffer (with its tooltip), a mark per tensor the C places in a pool, and the names
/// and sizes that fit whole inside them.
pub fn boxes(p: &Picture, g: &Frame) -> (Group, Group) {
    let mut boxes = Group::new().set("stroke", "#1d3557").set("stroke-width", 0.6);
    let mut box_labels = Group::new().set("font-family", FONT).set("fill", "#111").set("text-anchor", "middle");
    for (i, b) in p.boxes.iter().enumerate() {
        let (bx0, bx1) = (g.x0 + b.first as f64 * g.cw, g.x0 + (b.last + 1) as f64 * g.cw);
        if b.kind == BoxKind::PoolItem {
            let (mark, label) = pool_mark(b, g, (bx0, bx1), hue(i));
            boxes = boxes.add(mark.add(Title::new(tooltip(p, b))));
            box_labels = box_labels.add(label);
            continue;
        }
        let (top, bottom) = (g.y_of(b.offset.saturating_add(b.size)), g.y_of(b.offset));
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
        let (cx, cy) = ((bx0 + bx1) / 2.0, bottom - h / 2.0);
        // The name and the size, each whole or not at all (a pool's contents are labelled by
        // their marks: the pool's own name goes at its top).
        let size = human(b.size);
        let room = bx1 - bx0 - 6.0;
        let rows = ((h - 4.0) / 11.0).floor().max(0.0) as usize;
        let name_rows = rows.saturating_sub(1).min(3);
        // The name whole, else what tells the box apart in words that fit (the call numbers
        // name the operators under the axis).
        let named = if name_rows == 0 {
            None
        } else {
            [b.name.clone(), short_name(b)].iter().find_map(|n| fit(n, room, 10.0, 7.0, name_rows))
        };
        let mut texts: Vec<(f64, String)> =
            named.map(|(s, ls)| ls.into_iter().map(|l| (s, l)).collect()).unwrap_or_default();
        if rows >= 1 && width(&size, 9.0) <= room {
            texts.push((9.0, size));
        }
        let y_start = if b.kind == BoxKind::CPool { top + 14.0 } else { cy - (texts.len() as f64 - 1.0) * 5.5 + 3.5 };
        for (k, (s, t)) in texts.into_iter().enumerate() {
            box_labels =
                box_labels.add(Text::new(t).set("x", r(cx)).set("y", r(y_start + k as f64 * 11.0)).set("font-size", s));
        }
    }
    (boxes, box_labels)
}

/// A box's name when its own does not fit: what it is and the call that writes it.
fn short_name(b: &PlanBox) -> String {
    match b.kind {
        BoxKind::Scratch => format!("scratch, call {}", b.first),
        _ if b.name.starts_with("model output") => b.name.split(':').next().unwrap_or("model output").to_string(),
        _ => format!("output of call {}", b.first),
    }
}

/// A tensor the C places in a pool: a bar at its offset over the calls it is live in, and its
/// name above the bar when it fits whole.
fn pool_mark(b: &PlanBox, g: &Frame, (bx0, bx1): (f64, f64), hue: usize) -> (Group, Group) {
    let y = g.y_of(b.offset);
    let mark = Group::new().add(
        Rectangle::new()
            .set("x", r(bx0 + 1.0))
            .set("y", r(y - 2.0))
            .set("width", r((bx1 - bx0 - 2.0).max(1.0)))
            .set("height", 4)
            .set("fill", fill(BoxKind::PoolItem, hue))
            .set("stroke-width", 0.3),
    );
    let mut label = Group::new();
    if let Some((size, lines)) = fit(&b.name, bx1 - bx0 - 4.0, 9.0, 7.0, 1) {
        label = label
            .add(Text::new(lines.concat()).set("x", r((bx0 + bx1) / 2.0)).set("y", r(y - 4.0)).set("font-size", size));
    }
    (mark, label)
}

/// What a box holds, in words: its description, size, place and the operators it lives over.
pub fn tooltip(p: &Picture, b: &PlanBox) -> String {
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
    match b.kind {
        BoxKind::PoolItem => format!("{}; {when}", b.label),
        _ => format!("{}: {} bytes at arena offset {}, {when}", b.label, b.size, b.offset),
    }
}

/// The arena's size and the column where live bytes peak, with the peak's whole caption.
pub fn marks(p: &Picture, g: &Frame) -> Group {
    let (pc, pbytes) = p.peak();
    let px = g.x_mid(pc);
    let op = names::operator(p.columns.get(pc).map(String::as_str).unwrap_or(""));
    let caption = format!("peak: {pbytes} bytes live at call {pc} ({op})");
    let size = fit(&caption, g.x1 - g.x0, 12.0, 8.0, 1).map_or(8.0, |f| f.0);
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
        .add(g.text(g.x0, g.y1 + NAMES_DEPTH + 42.0, size, &caption).set("fill", "#c1121f").set("font-weight", "bold"))
}

/// A legend swatch of `kind` at `x`, its baseline at `y`: tensors show four of their colours.
fn swatch(x: f64, y: f64, kind: BoxKind) -> Group {
    let rect = |dx: f64, w: f64, fill: String| {
        Rectangle::new().set("x", x + dx).set("y", y - 10.0).set("width", w).set("height", 10).set("fill", fill)
    };
    let mut g = Group::new();
    match kind {
        BoxKind::Tensor => {
            for k in 0..4 {
                g = g.add(rect(k as f64 * 5.0, 5.0, fill(kind, hue(k))));
            }
            g.add(rect(0.0, 20.0, "none".into()).set("stroke", "#1d3557"))
        }
        BoxKind::PoolItem => g.add(rect(0.0, 20.0, "none".into())).add(
            Rectangle::new().set("x", x).set("y", y - 7.0).set("width", 20).set("height", 4).set("fill", fill(kind, 0)),
        ),
        _ => g.add(rect(0.0, 20.0, fill(kind, 0)).set("stroke", "#1d3557")),
    }
}

/// What the colours and marks mean: only what the picture uses.
pub fn legend(p: &Picture, g: &Frame) -> Group {
    let ly = g.y1 + NAMES_DEPTH + 60.0;
    let has = |k: BoxKind| p.boxes.iter().any(|b| b.kind == k);
    // (a box kind, or the dash pattern of a red line), text.
    let mut items: Vec<(Result<BoxKind, &str>, &str)> = Vec::new();
    if has(BoxKind::Tensor) {
        items.push((Ok(BoxKind::Tensor), "tensor (a colour each)"));
    }
    if has(BoxKind::Scratch) {
        items.push((Ok(BoxKind::Scratch), "operator scratch (TVMBackendAllocWorkspace)"));
    }
    if has(BoxKind::CPool) {
        items.push((Ok(BoxKind::CPool), "static RAM inside the C"));
    }
    if has(BoxKind::PoolItem) {
        items.push((Ok(BoxKind::PoolItem), "where the C puts a tensor in it (its start)"));
    }
    items.push((Err("6 4"), "arena size"));
    items.push((Err("3 3"), "peak of live bytes"));
    let mut legend = Group::new();
    let mut x = g.x0;
    for (mark, text) in items {
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
        x += 26.0 + width(text, 11.0) + 24.0;
    }
    legend
}
