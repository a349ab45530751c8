//! `cargo mlf run [--target …] --profile`: the program's per-operator figures (instructions on
//! an emulated device, nanoseconds on this computer) as a table — each operator's share of
//! the run, its arena window and parameter bytes from the memory plan, the operators' sum
//! against the run and the stated overhead — as JSON (`--profile-json`) and as a picture beside
//! the memory plan (`--profile-svg`).

use std::path::Path;

use mlf_build::__private::OperatorMemory;
use mlf_build::__private::svg::{ProfileBar, profile_svg};
use mlf_build::{Error, ModelDesc};
use serde_json::json;

use super::device::{Report, grouped};
use crate::io_error::InFile;

/// A profile and what it is measured in.
pub struct Profile<'a> {
    /// What the program reported.
    pub report: &'a Report,
    /// `instructions` (a device) or `ns` (this computer).
    pub unit: &'static str,
    /// Where it ran: the target triple and the machine, in words.
    pub target: String,
    /// The machine, in words.
    pub about: String,
    /// The figures' resolution, in `unit`.
    pub resolution: u64,
    /// The plan's figures of each operator, in run order (empty when the backend has none).
    pub memory: Vec<OperatorMemory>,
}

/// The operators' sum and the run's total.
fn totals(report: &Report) -> (u64, u64) {
    let sum = report.ops.iter().map(|o| o.instructions).sum();
    (sum, report.run.as_ref().map_or(0, |r| r.instructions))
}

/// `part` of `whole` in percent (0 for an empty whole).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// The run's figures that are in no operator's, as the program stated them.
struct Overhead {
    per_operator: f64,
    inside_per_operator: f64,
    /// The hook's figures outside the operators' (all operators).
    hook_outside: u64,
    /// The rest: the run's work between operators (input copies, staging, the executor's loop).
    between_operators: u64,
}

/// The overhead, from the hook's cost the program measured on empty operators: the run's total
/// minus the operators' sum is the hook's cost outside the figures plus the run's own work
/// between operators.
fn overhead(report: &Report) -> Option<Overhead> {
    let c = report.op_overhead?;
    let (sum, total) = totals(report);
    let n = report.ops.len() as f64;
    let hook_outside = (n * (c.per_operator() - c.inside_per_operator())).max(0.0).round() as u64;
    Some(Overhead {
        per_operator: c.per_operator(),
        inside_per_operator: c.inside_per_operator(),
        hook_outside,
        between_operators: total.saturating_sub(sum).saturating_sub(hook_outside),
    })
}

/// The plan's figures of operator `i` when they name the same operator.
fn memory_of<'m>(p: &'m Profile<'_>, i: usize, name: &str) -> Option<&'m OperatorMemory> {
    p.memory.get(i).filter(|m| m.name == name)
}

/// `offset..end (bytes)` of an arena window, or `-`.
fn window_text(m: Option<&OperatorMemory>) -> String {
    match m.and_then(|m| m.window.map(|w| (w, m.arena_bytes))) {
        Some(((from, to), bytes)) => format!("{from}..{to} ({bytes} B)"),
        None => "-".into(),
    }
}

/// The table, as lines.
pub fn table(p: &Profile<'_>) -> Vec<String> {
    let report = p.report;
    let (sum, total) = totals(report);
    let width = report.ops.iter().map(|o| o.name.len()).max().unwrap_or(0).clamp(8, 60);
    let windows: Vec<String> =
        report.ops.iter().enumerate().map(|(i, o)| window_text(memory_of(p, i, &o.name))).collect();
    let ww = windows.iter().map(String::len).max().unwrap_or(0).max("arena window".len());
    let unit = p.unit;
    let mut lines = vec![format!(
        "{:>5}  {:<width$}  {:<4}  {unit:>15}  {:>6}  {:<ww$}  {:>12}",
        "#", "operator", "unit", "share", "arena window", "param bytes"
    )];
    for (i, o) in report.ops.iter().enumerate() {
        let params = memory_of(p, i, &o.name).map_or("-".into(), |m| grouped(m.param_bytes));
        lines.push(format!(
            "{:>5}  {:<width$}  {:<4}  {:>15}  {:>5.1}%  {:<ww$}  {params:>12}",
            o.index,
            o.name,
            o.unit,
            grouped(o.instructions),
            share(o.instructions, total),
            windows[i],
        ));
    }
    if let Some(top) = report.ops.iter().max_by_key(|o| o.instructions) {
        lines.push(format!(
            "dominant: #{} {} ({:.1}% of the run)",
            top.index,
            top.name,
            share(top.instructions, total)
        ));
    }
    lines.push(format!(
        "operators' sum {} of the run's {} {unit} ({:.1}%); the rest ({}) is the hook's own cost and the run's own work between operators",
        grouped(sum),
        grouped(total),
        share(sum, total),
        grouped(total.saturating_sub(sum))
    ));
    if let Some(o) = overhead(report) {
        lines.push(format!(
            "stated overhead: the hook {:.0} {unit} per operator ({:.0} of them inside each operator's figure), {} outside the figures for {} operators; the run's own work between operators {}",
            o.per_operator,
            o.inside_per_operator,
            grouped(o.hook_outside),
            report.ops.len(),
            grouped(o.between_operators),
        ));
    }
    if report.ops_missing > 0 {
        lines.push(format!("{} operators past the program's table were not profiled", report.ops_missing));
    }
    lines
}

/// Prints the table on stderr (beside the run's other figures).
pub fn print(p: &Profile<'_>) {
    if p.report.ops.is_empty() {
        eprintln!("profile: the run reported no operator (a model whose operators are not behind the hook)");
        return;
    }
    match p.unit {
        "ns" => eprintln!("profile (mean nanoseconds between the hook's clock reads around each operator):"),
        _ => eprintln!("profile ({} between the hook's counter reads around each operator):", p.unit),
    }
    for line in table(p) {
        eprintln!("  {line}");
    }
}

/// The profile as JSON.
pub fn json(p: &Profile<'_>) -> serde_json::Value {
    let report = p.report;
    let (sum, total) = totals(report);
    let ops: Vec<_> = report
        .ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let m = memory_of(p, i, &o.name);
            json!({
                "index": o.index,
                "name": o.name,
                "unit": o.unit,
                p.unit: o.instructions,
                "share": share(o.instructions, total) / 100.0,
                "arena_window": m.and_then(|m| m.window).map(|(from, to)| json!({"offset": from, "end": to})),
                "arena_bytes": m.map(|m| m.arena_bytes),
                "param_bytes": m.map(|m| m.param_bytes),
            })
        })
        .collect();
    let (run_key, ops_key) = match p.unit {
        "ns" => ("run_ns", "operators_ns"),
        _ => ("run_instructions", "operators_instructions"),
    };
    json!({
        "target": p.target,
        "machine": p.about,
        "resolution": p.resolution,
        run_key: total,
        ops_key: sum,
        "operators": ops,
        "not_profiled": report.ops_missing,
        "overhead": overhead(report).map(|o| json!({
            "hook_per_operator": o.per_operator,
            "hook_inside_each_operator": o.inside_per_operator,
            "hook_outside_operators": o.hook_outside,
            "between_operators": o.between_operators,
        })),
    })
}

/// Writes the profile as JSON to `path`.
pub fn write_json(p: &Profile<'_>, path: &Path) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(&json(p)).map_err(|e| Error::invalid(e.to_string()))?;
    std::fs::write(path, text + "\n").in_file(path)
}

/// Writes the picture of the profile beside `desc`'s memory plan to `path`.
pub fn write_svg(p: &Profile<'_>, desc: &ModelDesc, name: &str, path: &Path) -> Result<(), Error> {
    let (_, total) = totals(p.report);
    let bars: Vec<ProfileBar> = p
        .report
        .ops
        .iter()
        .map(|o| ProfileBar {
            name: o.name.clone(),
            figure: o.instructions,
            share: share(o.instructions, total) / 100.0,
        })
        .collect();
    // A kmodel has no plan before it is decoded: its bars stand alone.
    let plan = mlf_build::__private::svg::picture(desc, name).ok();
    let title = format!("{name} on {} ({}), run {} {}", p.target, p.about, grouped(total), p.unit);
    std::fs::write(path, profile_svg(plan.as_ref(), &bars, p.unit, &title)).in_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::device::{HookCost, Measured, Op};

    #[test]
    fn the_table_names_the_dominant_operator_the_windows_and_the_rest() {
        let op = |index, instructions, name: &str| Op { index, unit: "cpu".into(), instructions, name: name.into() };
        let report = Report {
            run: Some(Measured { instructions: 1000, ..Measured::default() }),
            ops: vec![op(0, 200, "conv"), op(1, 700, "dense")],
            op_overhead: Some(HookCost { pairs: 4, instructions: 160, inside: 40 }),
            ..Report::default()
        };
        let memory = vec![
            OperatorMemory { name: "conv".into(), window: Some((0, 96)), arena_bytes: 80, param_bytes: 1200 },
            OperatorMemory { name: "other".into(), window: None, arena_bytes: 0, param_bytes: 5 },
        ];
        let p = Profile {
            report: &report,
            unit: "instructions",
            target: "t".into(),
            about: "m".into(),
            resolution: 1,
            memory,
        };
        let lines = table(&p);
        assert!(lines[0].contains("arena window") && lines[0].contains("param bytes"), "{lines:?}");
        assert!(lines[1].contains("0..96 (80 B)") && lines[1].ends_with("1,200"), "{lines:?}");
        // Figures of another operator are not shown against this one.
        assert!(lines[2].contains("dense") && lines[2].contains("70.0%") && lines[2].ends_with(" -"), "{lines:?}");
        assert_eq!(lines[3], "dominant: #1 dense (70.0% of the run)");
        assert!(lines[4].starts_with("operators' sum 900 of the run's 1,000 instructions (90.0%); the rest (100)"));
        // 40 per operator, 10 of them inside: 60 outside for two operators, 40 between them.
        assert_eq!(
            lines[5],
            "stated overhead: the hook 40 instructions per operator (10 of them inside each operator's figure), 60 outside the figures for 2 operators; the run's own work between operators 40"
        );
        let j = json(&p);
        assert_eq!(j["operators"][0]["arena_window"], json!({"offset": 0, "end": 96}));
        assert_eq!((j["run_instructions"].as_u64(), j["operators_instructions"].as_u64()), (Some(1000), Some(900)));
        assert_eq!(j["overhead"]["between_operators"].as_u64(), Some(40));
    }
}
