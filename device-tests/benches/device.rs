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
//! Then the external parameters: for every program that reads them (resident, streamed, lazy),
//! its instructions per inference against the embedded program (the bench fails when one is over
//! [`EXTERNAL_MOST`]×), the bytes it reads per inference and the share of its xxh64 checks; and
//! what opening a pack costs (header and digest, xxh64 of the pack, signature).
//!
//! Programs whose tools or fixtures are missing are left out (one line says why).

use device_tests::programs::{self, Outcome, PROGRAMS, Program};
use device_tests::tools;

/// Issue 26: a program reading its parameters from a pack (resident, streamed or lazy) takes at
/// most this many times the instructions per inference of the embedded program (its peer).
const EXTERNAL_MOST: f64 = 1.05;

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
    let within = external_table(&rows);
    println!();
    pack_table(&rows);
    println!();
    println!("Counter check (a loop of 2,000,000 instructions): {}", calibration.join(", "));
    if !within {
        eprintln!("a program with external parameters is over {EXTERNAL_MOST}× its embedded peer (table above)");
        std::process::exit(1);
    }
}

/// The summary figure `key` of `o`.
fn figure(o: &Outcome, key: &str) -> Option<u64> {
    o.report.summary.as_ref()?.number(key)
}

/// The external-parameter programs against their embedded peers; `false` when one is over
/// [`EXTERNAL_MOST`].
fn external_table(rows: &[(&Program, Outcome)]) -> bool {
    let per_kib = rows.iter().find_map(|(_, o)| figure(o, "xxh64_per_kib"));
    println!(
        "| program | placement | instructions / inference | embedded peer | ratio (≤ {EXTERNAL_MOST}) | parameter bytes read per inference | xxh64 instructions per inference | share |"
    );
    println!("|---|---|---:|---|---:|---:|---:|---:|");
    let mut within = true;
    for (p, o) in rows.iter().filter(|(p, _)| p.package == "flash-params") {
        let Some(ours) = figure(o, "instructions") else { continue };
        let Some((peer, theirs)) = p
            .peer
            .and_then(|peer| rows.iter().find(|(q, _)| q.name == peer))
            .and_then(|(q, qo)| Some((q.name, figure(qo, "instructions")?)))
        else {
            continue;
        };
        let ratio = ours as f64 / theirs as f64;
        within &= ratio <= EXTERNAL_MOST;
        // Streamed: every run reads what it stages; resident and lazy read nothing per inference
        // (resident: once by `load`; lazy: by the first run, measured apart).
        let (placement, bytes) = match figure(o, "param_bytes_per_run") {
            Some(b) => ("streamed", b),
            None if figure(o, "first_run_instructions").is_some() => ("lazy", 0),
            None => ("resident", 0),
        };
        let hashing = per_kib.map(|k| bytes * k / 1024);
        let share = hashing.map(|h| format!("{:.2} %", 100.0 * h as f64 / ours as f64)).unwrap_or_default();
        println!(
            "| {} | {placement} | {} | {peer} ({}) | {ratio:.3}{} | {} | {} | {share} |",
            p.name,
            group(ours),
            group(theirs),
            if ratio <= EXTERNAL_MOST { "" } else { " OVER" },
            group(bytes),
            hashing.map(group).unwrap_or_default(),
        );
    }
    within
}

/// What opening a pack and checking parameters cost (the `digits-slots` program's figures), and
/// the one-time reads of the resident and lazy programs.
fn pack_table(rows: &[(&Program, Outcome)]) {
    let Some((_, o)) = rows.iter().find(|(_, o)| figure(o, "open_signed_instructions").is_some()) else { return };
    let f = |k| figure(o, k).unwrap_or(0);
    let (signed, unsigned, check, header) = (
        f("open_signed_instructions"),
        f("open_unsigned_instructions"),
        f("check_instructions"),
        f("header_instructions"),
    );
    println!("Opening a pack on the Cortex-M4 ({} bytes, digits; instructions per open):", group(f("pack_bytes")));
    println!();
    println!("| check | instructions per open |");
    println!("|---|---:|");
    println!("| header (its xxh64) and model digest | {} |", group(header));
    println!("| + xxh64 of the covered bytes | {} |", group(check));
    println!(
        "| + every tar header, the index of the files: `FlashArchive::open` without a key | {} |",
        group(unsigned)
    );
    println!("| + Ed25519 signature: `Slots::open` with the code's key | {} |", group(signed));
    println!("| the signature alone | {} |", group(signed.saturating_sub(unsigned)));
    println!();
    println!(
        "xxh64: {} instructions per KiB. Stack of a signed open: {} bytes.",
        group(f("xxh64_per_kib")),
        group(f("open_stack"))
    );
    for (p, o) in rows.iter().filter(|(p, _)| p.package == "flash-params") {
        if let (Some(load), Some(bytes)) = (figure(o, "load_instructions"), figure(o, "param_bytes_loaded")) {
            println!(
                "{} (resident): `load` reads {} bytes once in {} instructions.",
                p.name,
                group(bytes),
                group(load)
            );
        }
        if let Some(first) = figure(o, "first_run_instructions") {
            println!("{} (lazy): the first run, which reads every file, takes {} instructions.", p.name, group(first));
        }
    }
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
