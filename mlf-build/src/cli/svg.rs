//! A picture of a model's static memory plan, as SVG: every arena buffer is a box spanning the
//! operators during which it is live (x) and the bytes it occupies (y), operator scratch in its
//! own colour; the peak of live bytes is marked; the parameters in flash stand beside it as one
//! stacked bar. Each box carries a tooltip (`<title>`) with its label, offset, size and lifetime.

use svg::Document;
use svg::node::element::{Group, Line, Rectangle, Text, Title};

use crate::backend::{self, BoxKind, Picture};
use crate::error::Result;
use crate::model::ModelDesc;
use crate::support::size::human;

/// The fill colour of a box of `kind` (tensors take the hue `tensor_hue`, in degrees).
fn fill(kind: BoxKind, tensor_hue: usize) -> String {
    match kind {
        BoxKind::Scratch => "#f4a261".to_string(),
        BoxKind::CPool => "#adb5bd".to_string(),
        BoxKind::Tensor => format!("hsl({tensor_hue}, 55%, 72%)"),
    }
}

/// A legend swatch of `kind` at `x`, its baseline at `y`.
fn swatch(x: f64, y: f64, kind: BoxKind) -> Rectangle {
    Rectangle::new()
        .set("x", x)
        .set("y", y - 10.0)
        .set("width", 14)
        .set("height", 10)
        .set("fill", fill(kind, 200))
        .set("stroke", "#1d3557")
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
        Document::new()
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
            .add(flash(self, &g))
            .to_string()
    }
}

/// The axes with their ticks, and their labels.
fn axes(p: &Picture, g: &Frame) -> (Group, Group) {
    let mut axes = Group::new().set("stroke", "#333").set("stroke-width", 1);
    axes = axes.add(line(g.x0, g.y1, g.x1, g.y1)).add(line(g.x0, g.y0, g.x0, g.y1));
    let mut labels = Group::new().set("font-family", FONT).set("font-size", 11).set("fill", "#333");
    for k in 0..=4u64 {
        let off = g.top_bytes * k / 4;
        let y = g.y_of(off);
        axes = axes.add(line(g.x0 - 5.0, y, g.x0, y));
        labels =
            labels.add(Text::new(human(off)).set("x", r(g.x0 - 8.0)).set("y", r(y + 4.0)).set("text-anchor", "end"));
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

/// A box per buffer (with its tooltip), and the size labels that fit inside them.
fn boxes(p: &Picture, g: &Frame) -> (Group, Group) {
    let mut boxes = Group::new().set("stroke", "#1d3557").set("stroke-width", 0.6);
    let mut box_labels =
        Group::new().set("font-family", FONT).set("font-size", 10).set("fill", "#111").set("text-anchor", "middle");
    for (i, b) in p.boxes.iter().enumerate() {
        let (bx0, bx1) = (g.x0 + b.first as f64 * g.cw, g.x0 + (b.last + 1) as f64 * g.cw);
        let (top, bottom) = (g.y_of(b.offset + b.size), g.y_of(b.offset));
        let h = (bottom - top).max(1.0);
        let fill = fill(b.kind, (i * 47) % 360);
        let tip = format!(
            "{}: offset {}, {} bytes, live over call{} {}",
            b.label,
            b.offset,
            b.size,
            if b.first == b.last { "" } else { "s" },
            if b.first == b.last { b.first.to_string() } else { format!("{}–{}", b.first, b.last) }
        );
        boxes = boxes.add(
            Rectangle::new()
                .set("x", r(bx0))
                .set("y", r(bottom - h))
                .set("width", r((bx1 - bx0).max(1.0)))
                .set("height", r(h))
                .set("fill", fill)
                .set("fill-opacity", 0.9)
                .add(Title::new(tip)),
        );
        if bx1 - bx0 >= 46.0 && h >= 14.0 {
            box_labels = box_labels
                .add(Text::new(human(b.size)).set("x", r((bx0 + bx1) / 2.0)).set("y", r(bottom - h / 2.0 + 3.5)));
        }
    }

    (boxes, box_labels)
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
            g.text(
                px,
                g.y1 + 54.0,
                12.0,
                &format!(
                    "peak: {pbytes} bytes live at call {pc} ({})",
                    short(p.columns.get(pc).map(String::as_str).unwrap_or(""), 48)
                ),
            )
            .set("text-anchor", if px > (g.x0 + g.x1) / 2.0 { "end" } else { "start" })
            .set("fill", "#c1121f")
            .set("font-weight", "bold"),
        )
}

/// What the colours and marks mean.
fn legend(p: &Picture, g: &Frame) -> Group {
    let ly = H - 14.0;
    let legend = Group::new()
        .add(swatch(g.x0, ly, BoxKind::Tensor))
        .add(g.text(g.x0 + 20.0, ly, 11.0, "tensor (activation or output)"))
        .add(swatch(g.x0 + 210.0, ly, BoxKind::Scratch))
        .add(g.text(g.x0 + 230.0, ly, 11.0, "operator scratch (TVMBackendAllocWorkspace)"))
        .add(
            line(g.x0 + 530.0, ly - 5.0, g.x0 + 555.0, ly - 5.0)
                .set("stroke", "#c1121f")
                .set("stroke-dasharray", "3 3")
                .set("stroke-width", 1.5),
        )
        .add(g.text(g.x0 + 560.0, ly, 11.0, "peak of live bytes"));
    if p.boxes.iter().any(|b| b.kind == BoxKind::CPool) {
        legend.add(swatch(g.x0 + 680.0, ly, BoxKind::CPool)).add(g.text(
            g.x0 + 700.0,
            ly,
            11.0,
            "static RAM inside the C",
        ))
    } else {
        legend
    }
}

/// The flash beside the arena: one bar of the parameters or constants, stacked.
fn flash(p: &Picture, g: &Frame) -> Group {
    let fx0 = g.x1 + 50.0;
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
                    .add(Title::new(format!("{name}: {bytes} bytes"))),
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
}
