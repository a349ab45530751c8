//! After `cargo build`: the programs cargo linked for a device target, measured from their ELF
//! section tables (flash, static RAM), and checked against the package's board
//! (`[package.metadata.mlf] board = { flash, ram }`): the budget of the whole firmware, not
//! only of its models.
//!
//! cargo is run with `--message-format json-render-diagnostics` (its diagnostics and progress
//! still go to the terminal) to learn which executables it linked, or with the JSON format the
//! user asked for, whose lines are passed on.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use cargo_metadata::Message;
use mlf_build::__private::budget::Budget;
use mlf_build::__private::size::human;
use mlf_build::{Error, MemoryReport};
use serde_json::json;

use super::regions::{self, Region, Use};

/// A package whose linked programs are measured.
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// Its board's limits (empty: none given).
    pub board: Budget,
    /// The reports of its models, for the target.
    pub reports: Vec<MemoryReport>,
    /// Its memory regions (linker script and `board.regions`; empty: none known).
    pub regions: Vec<Region>,
    /// The region each input section of the linker script's `SECTIONS` goes to (pattern,
    /// region): where a model's `arena_section` or `params_section` is counted.
    pub placements: Vec<(String, String)>,
    /// The region that holds the stack.
    pub stack_region: String,
    /// The application's own stack, as declared (`board.stack`).
    pub app_stack: Option<u64>,
}

impl Package {
    /// Before the link, the same fit from the models alone (bounds: the models' static RAM,
    /// shared arenas counted once, and the stacks in the stack's region; their flash in `FLASH`),
    /// printed, and an error naming the region when the models alone are over it.
    pub fn estimate(&self, json: bool) -> Result<(), Error> {
        if self.regions.is_empty() {
            return Ok(());
        }
        let totals = mlf_build::__private::Totals::of(&self.reports);
        let stack = models_stack(&self.reports);
        let placed = self.placed(json);
        let moved = |flash: bool| placed.iter().filter(|p| p.flash == flash).map(|p| p.bytes).sum::<u64>();
        let mut uses = Vec::new();
        for r in &self.regions {
            let mut u = Use { region: r.clone(), sections: Vec::new(), models_stack: None, app_stack: None };
            if r.name == self.stack_region {
                u.sections.push(("models' static RAM".into(), totals.ram.saturating_sub(moved(false))));
                (u.models_stack, u.app_stack) = (stack, self.app_stack);
            } else if r.name == "FLASH" {
                u.sections.push(("models' flash".into(), totals.flash.saturating_sub(moved(true))));
            }
            u.sections.extend(placed.iter().filter(|p| p.region == r.name).map(|p| (p.what.clone(), p.bytes)));
            if u.sections.is_empty() {
                continue;
            }
            if !json {
                eprintln!(
                    "  region {:<15}{} of {} bytes before the link (bounds from the models): {}",
                    r.name,
                    u.used(),
                    r.length,
                    u.items().replace(" (ELF)", "")
                );
            }
            uses.push(u);
        }
        regions::check(&format!("the models of {}", self.name), &uses).map_err(|e| e.in_file(&self.manifest_path))
    }
}

/// A model's arena or parameters in a link section the linker script places in a region.
struct Placed {
    /// What it is: `arena of kws (.psram)`.
    what: String,
    /// Its bytes.
    bytes: u64,
    /// Counted in flash (embedded parameters) rather than in static RAM.
    flash: bool,
    /// The region.
    region: String,
}

impl Package {
    /// The models' arenas and parameters in link sections, each with its region: a section no
    /// output section of the linker script takes stays counted with the models' static RAM or
    /// flash (a note says so, unless `json`).
    fn placed(&self, json: bool) -> Vec<Placed> {
        let mut out = Vec::new();
        for r in &self.reports {
            // An arena's section; parameters': embedded in flash, else their static region.
            let items = [
                (r.arena_section.as_deref().filter(|_| r.shared_arena.is_none()), "arena", r.ram.arena, false),
                (r.params_section.as_deref(), "parameters", r.flash.params.max(r.ram.params), r.ram.params == 0),
            ];
            for (section, what, bytes, flash) in items {
                let Some(section) = section.filter(|_| bytes > 0) else { continue };
                let what = format!("{what} of {} ({section})", r.model);
                match regions::region_of(section, &self.placements) {
                    Some(region) => out.push(Placed { what, bytes, flash, region: region.to_string() }),
                    None if !json => eprintln!(
                        "  note: {what}: no output section of the linker script takes `{section}`, so it stays counted with the models' before the link"
                    ),
                    None => {}
                }
            }
        }
        out
    }
}

/// What to measure after the build.
pub struct Plan {
    /// The packages.
    pub packages: Vec<Package>,
    /// The device targets cargo builds for (not the host).
    pub targets: Vec<String>,
    /// `--message-format` as given (`None`: not given).
    pub message_format: Option<String>,
}

/// The stack a run of the firmware's models needs, to count in its RAM: the deepest of the
/// reports' bounds (`STACK_BYTES` of the generated modules; kmodels state none here).
fn models_stack(reports: &[MemoryReport]) -> Option<u64> {
    reports.iter().filter_map(|r| r.stack.as_ref().map(|s| s.total)).max()
}

/// One measured program.
struct Measured {
    exe: PathBuf,
    target: String,
    flash: u64,
    ram: u64,
    stack: Option<u64>,
}

/// Runs `cargo build` with the arguments `pass` and, when `plan` has device targets, measures
/// what it linked and checks each program against its package's board. Returns the exit code.
pub fn cargo_build(pass: &[String], plan: &Plan) -> ExitCode {
    let cargo_bin = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo_bin);
    cmd.arg("build").args(pass);
    let json = plan.message_format.as_deref().map(|f| f.split(',').any(|f| f.trim().starts_with("json")));
    let measure = !plan.targets.is_empty() && !plan.packages.is_empty() && json != Some(false);
    if !measure {
        if !plan.targets.is_empty() && json == Some(false) {
            eprintln!("note: the linked programs are not measured with --message-format {:?}", plan.message_format);
        }
        return status_code(cmd.status(), &cargo_bin);
    }
    if json.is_none() {
        cmd.arg("--message-format=json-render-diagnostics");
    }
    let out = match cmd.stdout(Stdio::piped()).spawn().and_then(|c| c.wait_with_output()) {
        Ok(out) => out,
        Err(e) => return status_code(Err(e), &cargo_bin),
    };
    if json == Some(true) {
        // The user asked for cargo's JSON: pass it on (our lines follow).
        let _ = std::io::stdout().lock().write_all(&out.stdout);
    }
    if !out.status.success() {
        return status_code(Ok(out.status), &cargo_bin);
    }
    let mut problems = 0;
    for message in Message::parse_stream(&out.stdout[..]).flatten() {
        let Message::CompilerArtifact(a) = message else { continue };
        let (Some(exe), Some(pkg)) =
            (a.executable, plan.packages.iter().find(|p| a.manifest_path.as_std_path() == p.manifest_path))
        else {
            continue;
        };
        let exe = exe.into_std_path_buf();
        let Some(target) = plan.targets.iter().find(|t| exe.components().any(|c| c.as_os_str() == t.as_str())) else {
            continue;
        };
        match mlf_build::__private::measure_firmware(&exe) {
            Ok(m) => {
                let stack = models_stack(&pkg.reports);
                let regions = if pkg.regions.is_empty() {
                    Ok(Vec::new())
                } else {
                    regions::measure(&exe, &pkg.regions, &pkg.stack_region, (stack, pkg.app_stack))
                };
                let measured = Measured { exe, target: target.clone(), flash: m.flash, ram: m.ram, stack };
                match regions {
                    Ok(uses) => problems += report(pkg, &measured, &uses, json == Some(true)),
                    Err(e) => {
                        crate::diag::error(&e);
                        problems += 1;
                    }
                }
            }
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    if problems > 0 {
        eprintln!("error: the firmware does not fit the board");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Prints one program's figures and board verdict; returns the number of problems (0 or 1).
fn report(pkg: &Package, m: &Measured, uses: &[Use], json: bool) -> usize {
    let ram = m.ram + m.stack.unwrap_or(0) + pkg.app_stack.unwrap_or(0);
    let subject = format!("firmware {} ({}, {})", pkg.name, m.target, m.exe.display());
    let verdict = pkg
        .board
        .check(&subject, ram, m.flash)
        .and_then(|()| regions::check(&subject, uses))
        .map_err(|e| e.in_file(&pkg.manifest_path));
    if json {
        let line = json!({
            "reason": "mlf-firmware-report",
            "package": pkg.name,
            "manifest_path": pkg.manifest_path.display().to_string(),
            "target": m.target,
            "executable": m.exe.display().to_string(),
            "flash": m.flash,
            "ram": m.ram,
            "stack": m.stack,
            "app_stack": pkg.app_stack,
            "regions": uses.iter().map(|u| json!({
                "name": u.region.name, "origin": u.region.origin, "length": u.region.length,
                "used": u.used(), "sections": u.sections, "models_stack": u.models_stack,
                "app_stack": u.app_stack, "measured": "sections from the linked ELF; stacks are bounds",
            })).collect::<Vec<_>>(),
            "board": {"ram": pkg.board.ram, "flash": pkg.board.flash, "source": pkg.board.source},
            "within_budget": verdict.is_ok(),
        });
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    } else {
        let stack = match (m.stack, pkg.app_stack) {
            (Some(s), None) => format!("with {s} bytes of stack (mlf's bound for run())"),
            (Some(s), Some(a)) => {
                format!("with {s} bytes of stack (mlf's bound for run()) and {a} of the application's")
            }
            (None, Some(a)) => format!("with the application's {a} bytes of stack"),
            (None, None) => "the stack not included".to_string(),
        };
        eprintln!(
            "firmware {} for {} ({}): flash {} bytes ({}), static RAM {} bytes ({}), measured from the linked ELF's sections, {stack}",
            pkg.name,
            m.target,
            file_name(&m.exe),
            m.flash,
            human(m.flash),
            m.ram,
            human(m.ram)
        );
        if let Some(line) = board_line(&pkg.board, ram, m.flash) {
            eprintln!("  {:<22}{line}", "board");
        }
        for u in uses {
            eprintln!(
                "  region {:<15}{} of {} bytes ({}): {}",
                u.region.name,
                u.used(),
                u.region.length,
                if u.used() > u.region.length { "OVER" } else { "fits" },
                u.items()
            );
        }
    }
    match verdict {
        Ok(()) => 0,
        Err(e) => {
            if json {
                let line = json!({"reason": "mlf-error", "package": pkg.name, "model": "", "message": e.to_string()});
                let _ = writeln!(std::io::stdout().lock(), "{line}");
            }
            crate::diag::error(&e);
            1
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `ram 320 KiB, 4% used; flash 1.0 MiB, 2% used`.
fn board_line(b: &Budget, ram: u64, flash: u64) -> Option<String> {
    let used = |need: u64, have: u64| format!("{:.0}%", need as f64 * 100.0 / have.max(1) as f64);
    let mut parts = Vec::new();
    if let Some(r) = b.ram {
        parts.push(format!("ram {r} bytes ({}), {} used", human(r), used(ram, r)));
    }
    if let Some(f) = b.flash {
        parts.push(format!("flash {f} bytes ({}), {} used", human(f), used(flash, f)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The exit code for cargo's status.
fn status_code(status: std::io::Result<std::process::ExitStatus>, cargo: &std::ffi::OsStr) -> ExitCode {
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        // A failed status has a non-zero code, or none (killed by a signal).
        Ok(s) => ExitCode::from(s.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot run {}: {}", cargo.to_string_lossy(), Error::from(e));
            ExitCode::FAILURE
        }
    }
}
