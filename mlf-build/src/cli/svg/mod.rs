//! A picture of a model's static memory plan, as SVG: every arena buffer is a box spanning the
//! operator calls during which it is live (x, each call named under the axis) and the bytes it
//! occupies (y), named after its tensor (the operator that writes it) or the operator whose
//! scratch it is, tensors in a colour each, operator scratch in one colour; a USMP pool inside
//! the C stands above the arena with a mark where the C puts each tensor; the axis has round
//! ticks; the peak of live bytes is marked; the stack one run needs stands beside it on a scale
//! of its own (once the C is compiled), the parameters in flash beside that, named. Names are
//! drawn whole or not at all; each box carries a tooltip (`<title>`) saying in words what it
//! holds, where, how big and while which operators run.

use svg::Document;
use svg::node::element::Rectangle;

use crate::backend::{self, Picture};
use crate::error::Result;
use crate::model::ModelDesc;

mod bars;
mod frame;
mod plot;
mod profile;

pub use profile::{ProfileBar, profile_svg};

use frame::{Frame, H, W};

impl Picture {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let top = self.boxes.iter().map(|b| b.offset.saturating_add(b.size)).max().unwrap_or(0).max(self.arena);
        let g = Frame::new(self.columns.len(), top);
        let title_size = frame::fit(&self.title, W - g.x0 - 10.0, 16.0, 10.0, 1).map_or(10.0, |f| f.0);
        let caption = "static RAM: each box is one buffer, live from its first to its last operator call (x), at its arena offset (y)";
        let (axes, labels) = plot::axes(self, &g);
        let (boxes, box_labels) = plot::boxes(self, &g);
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
            .add(plot::marks(self, &g))
            .add(plot::legend(self, &g))
            .add(bars::flash(self, &g));
        match bars::stack(self, &g) {
            Some(stack) => doc.add(stack).to_string(),
            None => doc.to_string(),
        }
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
    use super::plot::tick_step;
    use crate::backend::{BoxKind, Picture, PlanBox};

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
        // Every call is named under the axis.
        for name in ["0: a", "1: b", "2: c"] {
            assert!(svg.contains(&format!(">\n{name}\n</text>")), "{name}: {svg}");
        }
    }

    #[test]
    fn the_stack_stands_beside_the_arena_on_its_own_scale() {
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
        assert!(svg.contains("stack: 1000 bytes") && svg.contains("to scale: the bar is the whole figure"), "{svg}");
        assert!(
            svg.contains("stack, C frames: 232 bytes (the model's C, deepest chain: main (40) → conv (192))"),
            "{svg}"
        );
        assert!(svg.contains("stack, mlf: 512 bytes") && svg.contains("stack, leaf: 256 bytes"), "{svg}");
        for label in ["C frames 232 B", "leaf 256 B", "mlf 512 B"] {
            assert!(svg.contains(&format!(">\n{label}\n</text>")), "{label}: {svg}");
        }
        assert!(!svg.contains("stack, source"), "no parameter source in an embedded run: {svg}");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(88192), (20 << 10, 1 << 10, "KiB"));
        assert_eq!(tick_step(176), (50, 1, "B"));
        assert_eq!(tick_step(3_377_604), (500 << 10, 1 << 10, "KiB"));
        assert_eq!(tick_step(40 << 20), (10 << 20, 1 << 20, "MiB"));
    }
}
