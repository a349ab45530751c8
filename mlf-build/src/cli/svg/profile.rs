//! The picture of a profile beside the memory plan: the plan's picture as `cargo mlf plan`
//! draws it, and under it one bar per operator — its share of the run, the dominant one
//! marked — standing under the plan's column of the same call when the plan has one column
//! per operator (graph models), in columns of their own otherwise (an AOT main, a kmodel:
//! their plans do not have one column per kernel call or layer).

use svg::Document;
use svg::node::element::{Group, Rectangle, Title};

use super::frame::{self, FONT, Frame, H, W, fit, r};
use crate::backend::Picture;

/// Height of the strip of bars under the plan.
const STRIP: f64 = 300.0;

/// One operator of a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileBar {
    /// Its name (a TVM function, a kmodel layer).
    pub name: String,
    /// Its figure (instructions on a device, nanoseconds on the host).
    pub figure: u64,
    /// Its share of the whole run (0 to 1).
    pub share: f64,
}

/// The SVG of `bars` (in run order, figures in `unit`) under the memory plan `plan` (none for a
/// kmodel, whose plan is made when the model is decoded); `title` names the run.
pub fn profile_svg(plan: Option<&Picture>, bars: &[ProfileBar], unit: &str, title: &str) -> String {
    let top_y = if plan.is_some() { H } else { 60.0 };
    let height = top_y + STRIP;
    let mut doc = Document::new()
        .set("viewBox", (0, 0, W, height))
        .set("width", W)
        .set("height", height)
        .add(Rectangle::new().set("width", "100%").set("height", "100%").set("fill", "white"));
    // The bars under the plan's columns when there is one column per operator.
    let columns = plan.map(|p| p.columns.len()).filter(|&n| n == bars.len()).unwrap_or(bars.len());
    let aligned = plan.is_some_and(|p| p.columns.len() == bars.len());
    let g = Frame::new(columns, 1);
    if let Some(p) = plan {
        doc = doc.add(nested_plan(p));
    } else {
        doc = doc.add(g.text(g.x0, 28.0, 16.0, title).set("font-weight", "bold"));
    }
    let (y0, y1) = (top_y + 40.0, top_y + STRIP - 70.0);
    let caption = format!(
        "profile: {title}; one bar per operator, its share of the run ({unit}){}",
        if aligned { ", under the plan's column of the same call" } else { "" }
    );
    let caption_size = fit(&caption, W - g.x0 - 10.0, 12.0, 8.0, 1).map_or(8.0, |f| f.0);
    doc = doc.add(g.text(g.x0, top_y + 18.0, caption_size, &caption).set("fill", "#333"));
    doc = doc.add(frame::line(g.x0, y1, g.x1, y1));
    let max = bars.iter().map(|b| b.figure).max().unwrap_or(0).max(1);
    let dominant = bars.iter().enumerate().max_by_key(|(i, b)| (b.figure, std::cmp::Reverse(*i))).map(|(i, _)| i);
    let mut group = Group::new().set("font-family", FONT).set("text-anchor", "middle");
    for (i, b) in bars.iter().enumerate() {
        let h = (b.figure as f64 / max as f64) * (y1 - y0);
        let (x, w) = (g.x0 + i as f64 * g.cw + g.cw * 0.15, g.cw * 0.7);
        let tip = format!("operator {i}: {}: {} {unit}, {:.1}% of the run", b.name, grouped(b.figure), b.share * 100.0);
        let colour = if Some(i) == dominant { "#d62828" } else { "#457b9d" };
        group = group.add(
            Rectangle::new()
                .set("x", r(x))
                .set("y", r(y1 - h.max(1.0)))
                .set("width", r(w.max(1.0)))
                .set("height", r(h.max(1.0)))
                .set("fill", colour)
                .add(Title::new(tip)),
        );
        let share = format!("{:.1}%", b.share * 100.0);
        if let Some((size, _)) = fit(&share, g.cw - 2.0, 10.0, 7.0, 1) {
            group = group.add(g.text(g.x_mid(i), y1 - h.max(1.0) - 4.0, size, &share).set("text-anchor", "middle"));
        }
        let label = format!("{i}: {}", mlf_short(&b.name));
        if let Some((size, lines)) = fit(&label, g.cw - 4.0, 9.0, 6.5, 3) {
            for (k, l) in lines.iter().enumerate() {
                group = group
                    .add(g.text(g.x_mid(i), y1 + 14.0 + k as f64 * (size + 2.0), size, l).set("text-anchor", "middle"));
            }
        }
    }
    if let Some(d) = dominant.filter(|_| !bars.is_empty()) {
        let note = format!("dominant: operator {d}, {} ({:.1}% of the run)", bars[d].name, bars[d].share * 100.0);
        let size = fit(&note, W - g.x0 - 10.0, 11.0, 7.0, 1).map_or(7.0, |f| f.0);
        group = group
            .add(g.text(g.x0, top_y + STRIP - 12.0, size, &note).set("fill", "#d62828").set("text-anchor", "start"));
    }
    doc.add(group).to_string()
}

/// The plan's own picture at the top: its `<svg>` element nested whole (an `<svg>` inside an
/// `<svg>` is a viewport of its own), so it keeps its tooltips and scales as text.
fn nested_plan(p: &Picture) -> svg::node::Blob {
    svg::node::Blob::new(p.to_svg())
}

/// An operator's name without TVM's `tvmgen_default_fused_` prefix (the tooltip has it whole).
fn mlf_short(name: &str) -> &str {
    name.strip_prefix("tvmgen_default_fused_").or_else(|| name.strip_prefix("tvmgen_default_")).unwrap_or(name)
}

/// `n` with `,` between groups of three digits.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
