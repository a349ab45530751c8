//! The device table: for every program of `firmware/` (built for its target, run under QEMU
//! with `-icount shift=0`) the instructions per inference, flash and static RAM from the
//! linked ELF's section table, and the painted-stack high-water of `run()`; then the overhead
//! table: instructions per inference of `run()`, of the same kernels called alone and of a
//! TVM-style graph executor over them (measured in the same program run), the stack a TVM
//! module states (`STACK_BYTES`) beside the measured one, and the ELF's `.data` bytes.
//!
//! ```sh
//! cargo bench -p device-tests --bench device
//! ```
//!
//! Programs whose tools or fixtures are missing are left out (one line says why).

use device_tests::programs::{self, Outcome, PROGRAMS, Program};
use device_tests::tools;

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let mut rows: Vec<(&Program, Outcome)> = Vec::new();
    for p in PROGRAMS {
        if !tools::require(p.name, &p.needs()) {
            continue;
        }
        eprintln!("running {} ({}, {})", p.name, p.target, p.package);
        rows.push((p, programs::run_program(p)));
    }
    let calibration: Vec<String> = programs::CALIBRATION
        .iter()
        .filter(|p| tools::require(p.name, &p.needs()))
        .map(|p| {
            let o = programs::run_program(p);
            let n = o.report.summary.as_ref().and_then(|s| s.number("instructions"));
            format!("{} {}", p.name, n.map(group).unwrap_or_else(|| "failed".into()))
        })
        .collect();
    println!(
        "| program | model | target | result | instructions / inference | vs | flash | test vectors | static RAM | stack of run() |"
    );
    println!("|---|---|---|---|---:|---|---:|---:|---:|---:|");
    for (p, o) in &rows {
        let s = o.report.summary.clone().unwrap_or_default();
        let result = match (s.get("result"), s.number("bit_exact"), s.number("cases")) {
            (Some(r), Some(b), Some(c)) => format!("{r} ({b}/{c} bit-exact)"),
            _ => format!("FAIL ({:?})", o.report.errors),
        };
        let instructions = s.number("instructions").unwrap_or(0);
        let vs = p
            .peer
            .and_then(|peer| rows.iter().find(|(q, _)| q.name == peer))
            .and_then(|(q, qo)| {
                let theirs = qo.report.summary.as_ref()?.number("instructions")?;
                Some(format!("{:.3}× {}", instructions as f64 / theirs as f64, q.name))
            })
            .unwrap_or_default();
        println!(
            "| {} | {} | {} | {result} | {} | {vs} | {} | {} | {} | {} |",
            p.name,
            p.about,
            p.target,
            group(instructions),
            group(o.memory.program_flash()),
            group(o.memory.test_data),
            group(o.memory.ram),
            group(s.number("max_stack").unwrap_or(0)),
        );
    }
    println!();
    overhead_table(&rows);
    println!();
    println!("Counter check (a loop of 2,000,000 instructions): {}", calibration.join(", "));
}

/// The overhead table (see the crate's doc).
fn overhead_table(rows: &[(&Program, Outcome)]) {
    println!(
        "| program | instructions mlf | kernels alone | overhead mlf | overhead TVM-style peer | ratio | stack stated / measured | .data bytes |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (p, o) in rows {
        let s = o.report.summary.clone().unwrap_or_default();
        let (run, kernels, peer) =
            (s.number("run_instructions"), s.number("kernels_instructions"), s.number("peer_instructions"));
        let ours = run.zip(kernels).map(|(r, k)| r as i64 - k as i64);
        let theirs = peer.zip(kernels).map(|(r, k)| r as i64 - k as i64);
        let cell = |n: Option<u64>| n.map(group).unwrap_or_else(|| "–".into());
        let signed = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_else(|| "–".into());
        let ratio = match (ours, theirs) {
            (Some(a), Some(b)) if b > 0 => format!("{:.2}", a as f64 / b as f64),
            _ => "–".into(),
        };
        let stack = format!("{} / {}", cell(s.number("stated_stack")), cell(s.number("max_stack")));
        println!(
            "| {} | {} | {} | {} | {} | {ratio} | {stack} | {} |",
            p.name,
            cell(run),
            cell(kernels),
            signed(ours),
            signed(theirs),
            o.memory.data()
        );
    }
}

/// `1234567` → `1,234,567`.
fn group(n: u64) -> String {
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
