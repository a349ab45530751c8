//! Issue 28's memory table: static RAM from the linked ELFs of the `firmware/arenas` programs
//! (Cortex-M4F, release, run under QEMU so that every model is seen reproducing its vectors):
//! two and three different models on one shared arena against the same programs with arenas of
//! their own; then the use of each memory region of the program whose shared arena is in the
//! MPS2's second RAM (PSRAM).
//!
//! ```sh
//! cargo bench -p device-tests --bench memory
//! ```
//!
//! Programs whose tools or fixtures are missing are left out (one line says why).

use device_tests::programs::{self, Outcome};
use device_tests::tools;

/// The regions of the MPS2 AN386's `memory.x` (`firmware/support/build.rs`): name, origin, length.
const MPS2_REGIONS: [(&str, u64, u64); 4] = [
    ("FLASH", 0, 3 << 20),
    ("PARAMS", 0x30_0000, 1 << 20),
    ("RAM", 0x2000_0000, 4 << 20),
    ("PSRAM", 0x2100_0000, 16 << 20),
];

fn run(name: &str) -> Option<Outcome> {
    let p = programs::find(name);
    if !tools::require(name, &p.needs()) {
        return None;
    }
    eprintln!("running {name}");
    let o = programs::run_program(p);
    let pass = o.report.summary.as_ref().and_then(|s| s.get("result").map(str::to_string));
    assert_eq!(pass.as_deref(), Some("PASS"), "{name}: {}", o.run.stdout);
    Some(o)
}

fn main() {
    println!(
        "| models | arena, shared | static RAM, shared (ELF) | arenas apart | static RAM, apart (ELF) | saved | shared RAM / larger arena |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (models, shared, apart) in [
        ("ResNet-8 (graph) + KWS (AOT)", "arenas-two", "arenas-two-apart"),
        ("ResNet-8 (graph) + KWS (AOT) + iris (kmodel)", "arenas-three", "arenas-three-apart"),
    ] {
        let (Some(s), Some(a)) = (run(shared), run(apart)) else { continue };
        let arena = |o: &Outcome| o.report.summary.as_ref().and_then(|s| s.number("arena_bytes")).unwrap_or(0);
        let (sa, aa) = (arena(&s), arena(&a));
        println!(
            "| {models} | {} | {} | {} | {} | {} | {:.4} |",
            group(sa),
            group(s.memory.ram),
            group(aa),
            group(a.memory.ram),
            group(a.memory.ram.saturating_sub(s.memory.ram)),
            s.memory.ram as f64 / sa.max(1) as f64
        );
    }
    println!();
    let Some(o) = run("arenas-psram") else { return };
    println!("Regions of `arenas-psram` (ResNet-8 + KWS, shared arena in `.psram`), from the linked ELF:");
    println!();
    println!("| region | origin | length | used | sections |");
    println!("|---|---:|---:|---:|---|");
    for (name, origin, length) in MPS2_REGIONS {
        let inside: Vec<_> =
            o.memory.sections.iter().filter(|s| s.address >= origin && s.address - origin < length).collect();
        let used: u64 = inside.iter().map(|s| s.bytes).sum();
        let list: Vec<String> = inside.iter().map(|s| format!("{} {}", s.name, group(s.bytes))).collect();
        println!("| {name} | {origin:#x} | {} | {} | {} |", group(length), group(used), list.join(", "));
    }
}

/// `1,234,567`.
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
