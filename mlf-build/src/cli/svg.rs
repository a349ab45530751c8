//! A picture of a model's static memory plan, as SVG: every arena buffer is a box spanning the
//! operators during which it is live (x) and the bytes it occupies (y), operator scratch in its
//! own colour; the peak of live bytes is marked; the parameters in flash stand beside it as one
//! stacked bar. Each box carries a tooltip (`<title>`) with its label, offset, size and lifetime.

use svg::Document;
use svg::node::element::{Group, Line, Rectangle, Text, Title};

use crate::error::{Context, Error, Result};
use crate::model::{Executor, ModelDesc};
use crate::plan;
use crate::support::size::human;

/// What is drawn: columns (operator calls) and boxes in the arena.
#[derive(Clone, Debug, Default)]
pub struct Picture {
    /// Title line.
    pub title: String,
    /// One label per column (operator function, or `run` for AOT).
    pub columns: Vec<String>,
    /// Arena boxes.
    pub boxes: Vec<PlanBox>,
    /// Arena bytes.
    pub arena: u64,
    /// Flash items: label and bytes.
    pub flash: Vec<(String, u64)>,
    /// What the flash bar holds (`parameters`, `constants in the C`).
    pub flash_caption: String,
}

/// One buffer in the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanBox {
    /// What it is (shown as a tooltip).
    pub label: String,
    /// Offset in the arena.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// First column it is live in.
    pub first: usize,
    /// Last column it is live in.
    pub last: usize,
    /// What it is (decides its colour).
    pub kind: BoxKind,
}

/// What a box of the picture is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoxKind {
    /// A tensor (activation or output) in the arena.
    Tensor,
    /// Operator scratch (`TVMBackendAllocWorkspace`) in the arena.
    Scratch,
    /// Static RAM inside the model's C (an AOT USMP workspace pool), drawn above the arena.
    CPool,
}

impl BoxKind {
    /// The fill colour of a box of this kind (tensors take the hue `tensor_hue`, in degrees).
    fn fill(self, tensor_hue: usize) -> String {
        match self {
            BoxKind::Scratch => "#f4a261".to_string(),
            BoxKind::CPool => "#adb5bd".to_string(),
            BoxKind::Tensor => format!("hsl({tensor_hue}, 55%, 72%)"),
        }
    }
}

/// A legend swatch of `kind` at `x`, its baseline at `y`.
fn swatch(x: f64, y: f64, kind: BoxKind) -> Rectangle {
    Rectangle::new()
        .set("x", x)
        .set("y", y - 10.0)
        .set("width", 14)
        .set("height", 10)
        .set("fill", kind.fill(200))
        .set("stroke", "#1d3557")
}

impl Picture {
    /// The picture of `desc`'s plan (planned as the builder plans it). `name` is the module
    /// name shown in the title. Kmodels are not planned at build time: an error says so.
    pub fn of(desc: &ModelDesc, name: &str) -> Result<Picture> {
        let align = desc.plan_align();
        match &desc.executor {
            Executor::Graph(_) => {
                let p = plan::graph::plan(desc, align).in_file(&desc.path)?;
                let n = p.calls.len().max(1);
                // Node id → column: a buffer live from node `a` to node `b` covers the calls
                // whose node lies in [a, b].
                let first_col = |node: usize| p.calls.iter().position(|c| c.node >= node).unwrap_or(n - 1);
                let last_col = |node: usize| p.calls.iter().rposition(|c| c.node <= node).unwrap_or(0);
                let boxes = p
                    .buffers
                    .iter()
                    .filter(|b| b.size > 0)
                    .map(|b| {
                        let (f, l) = (first_col(b.first), last_col(b.last));
                        PlanBox {
                            label: b.label.clone(),
                            offset: b.offset,
                            size: b.size,
                            first: f.min(l),
                            last: l.max(f),
                            kind: if b.scratch { BoxKind::Scratch } else { BoxKind::Tensor },
                        }
                    })
                    .collect();
                let (flash, flash_caption) = if desc.params.iter().any(|p| p.linked.is_none()) {
                    (
                        desc.params
                            .iter()
                            .filter(|p| p.linked.is_none())
                            .map(|p| (p.name.clone(), p.bytes()))
                            .collect(),
                        "parameters in flash".to_string(),
                    )
                } else {
                    (
                        desc.code.constants.iter().map(|c| (c.name.clone(), c.bytes)).collect(),
                        "constants in the C (flash)".to_string(),
                    )
                };
                Ok(Picture {
                    title: format!(
                        "{name}: graph executor, {} operator calls, arena {} bytes ({} layout; TVM's executor: {} bytes)",
                        p.calls.len(),
                        p.arena_bytes,
                        p.layout,
                        p.tvm.storage_bytes + p.tvm.workspace_bytes
                    ),
                    columns: p.calls.iter().map(|c| c.func.clone()).collect(),
                    boxes,
                    arena: p.arena_bytes,
                    flash,
                    flash_caption,
                })
            }
            Executor::Aot(a) => {
                let p = plan::aot::plan(desc, align).in_file(&desc.path)?;
                let mut boxes = Vec::new();
                if p.workspace_bytes > 0 {
                    boxes.push(PlanBox {
                        label: format!(
                            "TVMBackendAllocWorkspace window ({} bytes from {}, {} of alignment slack)",
                            p.tvm_workspace_bytes, a.workspace_source, p.slack_bytes
                        ),
                        offset: 0,
                        size: p.workspace_bytes,
                        first: 0,
                        last: 0,
                        kind: BoxKind::Scratch,
                    });
                }
                for (t, off) in desc.outputs.iter().zip(&p.outputs) {
                    boxes.push(PlanBox {
                        label: format!("output {}", t.name),
                        offset: *off,
                        size: t.bytes(),
                        first: 0,
                        last: 0,
                        kind: BoxKind::Tensor,
                    });
                }
                for (pool, off, bytes) in &p.pools {
                    boxes.push(PlanBox {
                        label: format!("pool {pool}"),
                        offset: *off,
                        size: *bytes,
                        first: 0,
                        last: 0,
                        kind: BoxKind::Tensor,
                    });
                }
                if let Some(u) = a.usmp.as_ref().filter(|u| u.workspace_bytes > 0) {
                    boxes.push(PlanBox {
                        label: "USMP workspace pool compiled into the C (a static of its own, drawn above the arena)"
                            .into(),
                        offset: p.arena_bytes,
                        size: u.workspace_bytes,
                        first: 0,
                        last: 0,
                        kind: BoxKind::CPool,
                    });
                }
                let usmp = a
                    .usmp
                    .as_ref()
                    .map(|u| format!(" + USMP pool inside the C: {} bytes", u.workspace_bytes))
                    .unwrap_or_default();
                Ok(Picture {
                    title: format!("{name}: AOT executor ({}), arena {} bytes{usmp}", a.call.symbol(), p.arena_bytes),
                    columns: vec![a.call.symbol().to_string()],
                    boxes,
                    arena: p.arena_bytes,
                    flash: desc.code.constants.iter().map(|c| (c.name.clone(), c.bytes)).collect(),
                    flash_caption: "constants in the C (flash)".into(),
                })
            }
            Executor::Kmodel(_) => {
                Err(Error::unsupported("kmodel: not planned by the build step, so there is no plan to draw")
                    .in_file(&desc.path))
            }
        }
    }

    /// Live bytes per column and the column where they peak.
    pub fn peak(&self) -> (usize, u64) {
        let mut live = vec![0u64; self.columns.len().max(1)];
        for b in &self.boxes {
            for l in live.iter_mut().take(b.last + 1).skip(b.first) {
                *l += b.size;
            }
        }
        live.iter().enumerate().max_by_key(|&(i, &v)| (v, std::cmp::Reverse(i))).map(|(i, &v)| (i, v)).unwrap_or((0, 0))
    }

    /// The SVG document.
    pub fn to_svg(&self) -> String {
        const W: f64 = 1100.0;
        const H: f64 = 640.0;
        let (x0, x1, y0, y1) = (90.0, W - 290.0, 70.0, H - 90.0);
        let font = "DejaVu Sans, Helvetica, Arial, sans-serif";
        let cols = self.columns.len().max(1) as f64;
        let cw = (x1 - x0) / cols;
        let top_bytes = self.boxes.iter().map(|b| b.offset + b.size).max().unwrap_or(0).max(self.arena);
        let arena = top_bytes.max(1) as f64;
        let y_of = |off: u64| y1 - (off as f64 / arena) * (y1 - y0);
        let text = |x: f64, y: f64, size: f64, s: &str| {
            Text::new(s).set("x", r(x)).set("y", r(y)).set("font-size", size).set("font-family", font)
        };

        let mut doc = Document::new()
            .set("viewBox", (0, 0, W, H))
            .set("width", W)
            .set("height", H)
            .add(Rectangle::new().set("width", "100%").set("height", "100%").set("fill", "white"))
            .add(text(x0, 28.0, if self.title.chars().count() > 95 { 13.0 } else { 16.0 }, &self.title).set("font-weight", "bold"))
            .add(text(x0, 50.0, 12.0, "static RAM: each box is one buffer, live from its first to its last operator (x), at its arena offset (y)").set("fill", "#555"));

        // Axes and ticks.
        let mut axes = Group::new().set("stroke", "#333").set("stroke-width", 1);
        axes = axes.add(line(x0, y1, x1, y1)).add(line(x0, y0, x0, y1));
        let mut labels = Group::new().set("font-family", font).set("font-size", 11).set("fill", "#333");
        for k in 0..=4u64 {
            let off = top_bytes * k / 4;
            let y = y_of(off);
            axes = axes.add(line(x0 - 5.0, y, x0, y));
            labels =
                labels.add(Text::new(human(off)).set("x", r(x0 - 8.0)).set("y", r(y + 4.0)).set("text-anchor", "end"));
        }
        let step = (self.columns.len() / 20).max(1);
        for c in (0..self.columns.len()).step_by(step) {
            let x = x0 + (c as f64 + 0.5) * cw;
            axes = axes.add(line(x, y1, x, y1 + 5.0));
            labels =
                labels.add(Text::new(c.to_string()).set("x", r(x)).set("y", r(y1 + 18.0)).set("text-anchor", "middle"));
        }
        labels = labels
            .add(
                Text::new("operator call")
                    .set("x", r((x0 + x1) / 2.0))
                    .set("y", r(y1 + 36.0))
                    .set("text-anchor", "middle"),
            )
            .add(
                Text::new("offset (bytes)")
                    .set("x", 0)
                    .set("y", 0)
                    .set("text-anchor", "middle")
                    .set("transform", format!("translate(22 {}) rotate(-90)", r((y0 + y1) / 2.0))),
            );

        // Buffers.
        let mut boxes = Group::new().set("stroke", "#1d3557").set("stroke-width", 0.6);
        let mut box_labels =
            Group::new().set("font-family", font).set("font-size", 10).set("fill", "#111").set("text-anchor", "middle");
        for (i, b) in self.boxes.iter().enumerate() {
            let (bx0, bx1) = (x0 + b.first as f64 * cw, x0 + (b.last + 1) as f64 * cw);
            let (top, bottom) = (y_of(b.offset + b.size), y_of(b.offset));
            let h = (bottom - top).max(1.0);
            let fill = b.kind.fill((i * 47) % 360);
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

        // Peak and arena size.
        let (pc, pbytes) = self.peak();
        let px = x0 + (pc as f64 + 0.5) * cw;
        let marks = Group::new()
            .add(
                line(x0, y_of(self.arena), x1, y_of(self.arena))
                    .set("stroke", "#c1121f")
                    .set("stroke-width", 1.2)
                    .set("stroke-dasharray", "6 4"),
            )
            .add(
                text(x1, y_of(self.arena) - 6.0, 11.0, &format!("arena: {} bytes", self.arena))
                    .set("text-anchor", "end")
                    .set("fill", "#c1121f"),
            )
            .add(line(px, y0, px, y1).set("stroke", "#c1121f").set("stroke-width", 1.5).set("stroke-dasharray", "3 3"))
            .add(
                text(
                    px,
                    y1 + 54.0,
                    12.0,
                    &format!(
                        "peak: {pbytes} bytes live at call {pc} ({})",
                        short(self.columns.get(pc).map(String::as_str).unwrap_or(""), 48)
                    ),
                )
                .set("text-anchor", if px > (x0 + x1) / 2.0 { "end" } else { "start" })
                .set("fill", "#c1121f")
                .set("font-weight", "bold"),
            );

        // Legend.
        let ly = H - 14.0;
        let legend = Group::new()
            .add(swatch(x0, ly, BoxKind::Tensor))
            .add(text(x0 + 20.0, ly, 11.0, "tensor (activation or output)"))
            .add(swatch(x0 + 210.0, ly, BoxKind::Scratch))
            .add(text(x0 + 230.0, ly, 11.0, "operator scratch (TVMBackendAllocWorkspace)"))
            .add(
                line(x0 + 530.0, ly - 5.0, x0 + 555.0, ly - 5.0)
                    .set("stroke", "#c1121f")
                    .set("stroke-dasharray", "3 3")
                    .set("stroke-width", 1.5),
            )
            .add(text(x0 + 560.0, ly, 11.0, "peak of live bytes"));
        let legend = if self.boxes.iter().any(|b| b.kind == BoxKind::CPool) {
            legend.add(swatch(x0 + 680.0, ly, BoxKind::CPool)).add(text(
                x0 + 700.0,
                ly,
                11.0,
                "static RAM inside the C",
            ))
        } else {
            legend
        };

        // Flash beside it.
        let fx0 = x1 + 50.0;
        let fw = 60.0;
        let total: u64 = self.flash.iter().map(|(_, b)| *b).sum();
        let mut flash =
            Group::new().add(text(fx0, y0 - 24.0, 12.0, &self.flash_caption).set("font-weight", "bold")).add(
                text(fx0, y0 - 8.0, 11.0, &format!("{} bytes in {} arrays", total, self.flash.len()))
                    .set("fill", "#555"),
            );
        if total > 0 {
            let scale = (y1 - y0) / total as f64;
            let mut y = y1;
            let big: Vec<usize> = {
                let mut idx: Vec<usize> = (0..self.flash.len()).collect();
                idx.sort_by_key(|&i| std::cmp::Reverse(self.flash[i].1));
                idx.into_iter().take(8).collect()
            };
            for (i, (name, bytes)) in self.flash.iter().enumerate() {
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
                    flash = flash.add(text(
                        fx0 + fw + 6.0,
                        y - h / 2.0 + 4.0,
                        10.0,
                        &format!("{} {}", short(name, 14), human(*bytes)),
                    ));
                }
                y -= h;
            }
        } else {
            flash = flash.add(text(fx0, (y0 + y1) / 2.0, 11.0, "none"));
        }
        doc = doc.add(axes).add(labels).add(boxes).add(box_labels).add(marks).add(legend).add(flash);
        doc.to_string()
    }
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
    Ok(Picture::of(desc, name)?.to_svg())
}

#[cfg(test)]
mod tests {
    use super::*;

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
