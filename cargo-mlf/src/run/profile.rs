//! `cargo mlf run --target … --profile`: the device program's per-operator instructions as a
//! table (each operator's share of the run, the operators' sum against the run and the
//! difference: the hook's own instructions and what runs between operators), and as JSON.

use std::path::Path;

use mlf_build::Error;
use serde_json::json;

use super::device::{Report, grouped};
use super::machine::Machine;
use crate::io_error::InFile;

/// The operators' sum and the run's total.
fn totals(report: &Report) -> (u64, u64) {
    let sum = report.ops.iter().map(|o| o.instructions).sum();
    (sum, report.run.as_ref().map_or(0, |r| r.instructions))
}

/// `part` of `whole` in percent (0 for an empty whole).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// The table, as lines.
pub fn table(report: &Report) -> Vec<String> {
    let (sum, total) = totals(report);
    let width = report.ops.iter().map(|o| o.name.len()).max().unwrap_or(0).clamp(8, 60);
    let mut lines =
        vec![format!("{:>5}  {:<width$}  {:<4}  {:>15}  {:>6}", "#", "operator", "unit", "instructions", "share")];
    for o in &report.ops {
        lines.push(format!(
            "{:>5}  {:<width$}  {:<4}  {:>15}  {:>5.1}%",
            o.index,
            o.name,
            o.unit,
            grouped(o.instructions),
            share(o.instructions, total)
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
        "operators' sum {} of the run's {} instructions ({:.1}%); the rest ({}) is the hook's counter reads and the run's own work between operators",
        grouped(sum),
        grouped(total),
        share(sum, total),
        grouped(total.saturating_sub(sum))
    ));
    if report.ops_missing > 0 {
        lines.push(format!("{} operators past the program's table were not profiled", report.ops_missing));
    }
    lines
}

/// Prints the table on stderr (beside the run's other figures).
pub fn print(report: &Report) {
    if report.ops.is_empty() {
        eprintln!("profile: the run reported no operator (a model whose operators are not behind the hook)");
        return;
    }
    eprintln!("profile (instructions between the hook's counter reads around each operator):");
    for line in table(report) {
        eprintln!("  {line}");
    }
}

/// Writes the profile as JSON to `path`.
pub fn write_json(machine: &Machine, report: &Report, path: &Path) -> Result<(), Error> {
    let (sum, total) = totals(report);
    let ops: Vec<_> = report
        .ops
        .iter()
        .map(|o| {
            json!({
                "index": o.index,
                "name": o.name,
                "unit": o.unit,
                "instructions": o.instructions,
                "share": share(o.instructions, total) / 100.0,
            })
        })
        .collect();
    let doc = json!({
        "target": machine.target,
        "machine": machine.about,
        "resolution": machine.resolution(),
        "run_instructions": total,
        "operators_instructions": sum,
        "operators": ops,
        "not_profiled": report.ops_missing,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::invalid(e.to_string()))?;
    std::fs::write(path, text + "\n").in_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::device::{Measured, Op};

    #[test]
    fn the_table_names_the_dominant_operator_and_the_rest() {
        let op = |index, instructions, name: &str| Op { index, unit: "cpu".into(), instructions, name: name.into() };
        let report = Report {
            run: Some(Measured { instructions: 1000, ..Measured::default() }),
            ops: vec![op(0, 200, "conv"), op(1, 700, "dense")],
            ..Report::default()
        };
        let lines = table(&report);
        assert!(lines[2].contains("dense") && lines[2].contains("70.0%"), "{lines:?}");
        assert_eq!(lines[3], "dominant: #1 dense (70.0% of the run)");
        assert!(lines[4].starts_with("operators' sum 900 of the run's 1,000 instructions (90.0%); the rest (100)"));
    }
}
