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

/// The stack a run of the firmware's models needs, to count in its RAM: none yet. Issue 13
/// adds the figure to the memory report (`STACK_BYTES` of the generated module); the deepest of
/// `reports` then goes here, and into the board's RAM check below.
fn models_stack(reports: &[MemoryReport]) -> Option<u64> {
    let _ = reports;
    None
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
                let measured = Measured { exe, target: target.clone(), flash: m.flash, ram: m.ram, stack };
                problems += report(pkg, &measured, json == Some(true));
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
fn report(pkg: &Package, m: &Measured, json: bool) -> usize {
    let ram = m.ram + m.stack.unwrap_or(0);
    let subject = format!("firmware {} ({}, {})", pkg.name, m.target, m.exe.display());
    let verdict = pkg.board.check(&subject, ram, m.flash).map_err(|e| e.in_file(&pkg.manifest_path));
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
            "board": {"ram": pkg.board.ram, "flash": pkg.board.flash, "source": pkg.board.source},
            "within_budget": verdict.is_ok(),
        });
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    } else {
        let stack = match m.stack {
            Some(s) => format!("with {s} bytes of stack"),
            None => "the stack not included".to_string(),
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
