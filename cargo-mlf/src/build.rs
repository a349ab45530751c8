//! `cargo mlf build [--plan-svg DIR] [--check-only] [cargo build arguments…]`: checks every
//! model listed in `[package.metadata.mlf]` of the selected packages (reader errors, C that does
//! not compile for the target, budgets), prints a memory report per model, then runs
//! `$CARGO build` with the arguments passed through and returns its exit code.
//!
//! The checks are the ones the build script makes (`mlf_build::compile_listed` or
//! `Model::compile`), run first so that a model over its budget fails fast, with the numbers,
//! before cargo builds anything. They are for the target cargo builds for, read from its
//! configuration as cargo reads it ([`config`]); after the build, the programs linked for a
//! device target are measured and checked against the package's board ([`firmware`]). `--message-format json…` (passed on to cargo too) prints the
//! reports as JSON lines on stdout, beside cargo's own messages, each with a `reason`:
//! `mlf-model-report`, `mlf-package-report` or `mlf-error`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use mlf_build::__private::budget::{self, Budget};
use mlf_build::__private::manifest::{Manifest, ModelEntry, ModuleNames, TABLE};
use mlf_build::__private::size::human;
use mlf_build::__private::{SharedArena, Totals};
use mlf_build::Error;
use mlf_build::MemoryReport;
use serde_json::{Value, json};

use crate::io_error::InFile;

mod args;
mod config;
mod firmware;
mod regions;
mod span;
mod unlisted;

pub use args::{CargoArgs, scan};

use config::{CargoConfig, Target};

/// Arguments of `build`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also write a picture of each model's memory plan to DIR/PACKAGE-MODEL.svg.
    #[arg(long, value_name = "DIR")]
    plan_svg: Option<PathBuf>,
    /// Check the models and print the report, but do not run `cargo build`.
    #[arg(long)]
    check_only: bool,
    /// Arguments for `cargo build`, passed through: `--release`, `--target T`, `-p P`,
    /// `--features F`, `--manifest-path P`, `--message-format json`, …
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CARGO_BUILD_ARGS")]
    cargo_args: Vec<String>,
}

impl Args {
    /// The arguments with `--color` (given before `build`, or among cargo's arguments) passed
    /// on to cargo too.
    pub fn with_color(mut self, color: Option<crate::diag::Color>) -> Args {
        if let Some(c) = color {
            let word = match c {
                crate::diag::Color::Auto => "auto",
                crate::diag::Color::Always => "always",
                crate::diag::Color::Never => "never",
            };
            self.cargo_args.insert(0, format!("--color={word}"));
        }
        self
    }
}

/// The host's target triple, the one `cargo build` uses without `--target`: the host of `$RUSTC`
/// (`rustc -vV`), or failing that the target cargo-mlf itself was built for.
pub fn host_triple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    Command::new(&rustc)
        .arg("-vV")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("host: ").map(|h| h.trim().to_string()))
        })
        .unwrap_or_else(|| env!("MLF_HOST_TARGET").to_string())
}

/// One package with a table.
struct Selected {
    name: String,
    manifest_path: PathBuf,
    manifest: Manifest,
}

/// The packages cargo would build, with their tables (packages without one are left out).
fn select(cargo: &CargoArgs) -> Result<(Vec<Selected>, PathBuf, Vec<unlisted::Unlisted>), Error> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.no_deps();
    if let Some(p) = &cargo.manifest_path {
        cmd.manifest_path(p);
    }
    let meta = cmd.exec().map_err(|e| Error::invalid(format!("cargo metadata failed: {e}")))?;
    let members: Vec<&cargo_metadata::Package> = meta.workspace_packages();
    let chosen: Vec<&cargo_metadata::Package> = if !cargo.packages.is_empty() {
        let mut v = Vec::new();
        for name in &cargo.packages {
            match members.iter().find(|p| p.name.as_str() == name) {
                Some(p) => v.push(*p),
                None => {
                    return Err(Error::invalid(format!(
                        "package {name:?} is not a member of the workspace at {}",
                        meta.workspace_root
                    )));
                }
            }
        }
        v
    } else if cargo.workspace {
        members.iter().copied().filter(|p| !cargo.exclude.iter().any(|x| x == p.name.as_str())).collect()
    } else {
        // The package whose manifest cargo starts from (--manifest-path, or the nearest
        // Cargo.toml), or the workspace's default members for a virtual manifest.
        let start = match &cargo.manifest_path {
            Some(p) => p.canonicalize().ok(),
            None => std::env::current_dir()
                .ok()
                .and_then(|d| d.ancestors().map(|a| a.join("Cargo.toml")).find(|p| p.is_file()))
                .and_then(|p| p.canonicalize().ok()),
        };
        match members.iter().find(|p| {
            start.as_deref() == Some(p.manifest_path.as_std_path())
                || p.manifest_path.as_std_path().canonicalize().ok() == start
        }) {
            Some(p) => vec![*p],
            None if meta.workspace_default_members.is_available() => {
                members.iter().copied().filter(|p| meta.workspace_default_members.contains(&p.id)).collect()
            }
            None => members,
        }
    };
    let (mut out, mut unlisted) = (Vec::new(), Vec::new());
    for p in chosen {
        let manifest_path = p.manifest_path.clone().into_std_path_buf();
        let manifest = Manifest::from_package_metadata(&p.metadata, &manifest_path)?;
        let listed: Vec<PathBuf> = manifest.iter().flat_map(|m| m.models.iter().map(|e| e.path.clone())).collect();
        let dir = manifest_path.parent().unwrap_or(Path::new("."));
        let build_rs = p.targets.iter().find(|t| t.is_custom_build()).map(|t| t.src_path.clone().into_std_path_buf());
        unlisted.extend(build_rs.and_then(|b| unlisted::find(&p.name, &b, dir, &listed)));
        if let Some(manifest) = manifest {
            out.push(Selected { name: p.name.to_string(), manifest_path, manifest });
        }
    }
    let target_dir = cargo.target_dir.clone().unwrap_or_else(|| meta.target_directory.clone().into_std_path_buf());
    Ok((out, target_dir, unlisted))
}

/// A spinner on stderr (drawn only when stderr is a terminal) after `label`, its message the
/// current stage (a model's check, cargo's current step in `cargo mlf run`).
pub fn spinner(label: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner:.green} {prefix:.bold} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_prefix(label.to_string());
    pb.enable_steady_tick(Duration::from_millis(100));
    pb
}

/// Checks one model: reads it, compiles its C for `target` (with the flags cargo gives rustc
/// for it) into `check_dir`, and computes its report.
fn check_model(
    pkg: &Selected,
    entry: &ModelEntry,
    (target, rustflags): (&str, &[String]),
    host: &str,
    check_dir: &Path,
    pb: &ProgressBar,
) -> Result<(MemoryReport, mlf_build::ModelDesc), Error> {
    let dir = pkg.manifest_path.parent().unwrap_or(Path::new("."));
    let path = dir.join(&entry.path);
    pb.set_message(format!("reading {}", entry.path.display()));
    let desc = mlf_build::open_with(&path, &mlf_build::ReadOptions { module: entry.module.clone() })?;
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")).in_file(&path));
    }
    let name = entry.name.clone().unwrap_or_else(|| desc.default_module_name(&path));
    if !mlf_build::__private::has_build_step(&desc) {
        let kpu = entry.kpu.unwrap_or_default();
        let mut report =
            mlf_build::__private::memory_report_on(&desc, &name, target, entry.module.as_deref(), None, kpu)?;
        report.shared_arena = entry.arena.clone();
        (report.arena_section, report.params_section) = (entry.arena_section.clone(), entry.params_section.clone());
        return Ok((report, desc));
    }
    if entry.kpu.is_some() {
        let e = Error::invalid("`kpu` chooses where a kmodel's KPU layers run; this is a TVM model");
        return Err(e.at("kpu").in_file(&pkg.manifest_path));
    }
    pb.set_message(format!("planning memory and compiling C for {target}"));
    let model = entry.to_model(dir)?.rustflags(rustflags.to_vec());
    let built = model.build_into(&path, check_dir, &pkg.name, target, host, false)?;
    pb.set_message("measuring the compiled C");
    let report = built.report()?;
    Ok((report, desc))
}

fn budget_json(b: &Budget) -> Value {
    json!({"ram": b.ram, "flash": b.flash, "source": b.source})
}

fn percent(need: u64, budget: u64) -> String {
    if budget == 0 { "∞".into() } else { format!("{:.0}%", need as f64 * 100.0 / budget as f64) }
}

fn budget_line(b: &Budget, ram: u64, flash: u64) -> Option<String> {
    if b.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(r) = b.ram {
        parts.push(format!("ram {r} bytes ({}), {} used", human(r), percent(ram, r)));
    }
    if let Some(f) = b.flash {
        parts.push(format!("flash {f} bytes ({}), {} used", human(f), percent(flash, f)));
    }
    Some(parts.join("; "))
}

/// Runs `build` and returns the exit code.
pub fn run(args: Args) -> ExitCode {
    let mut plan_svg = args.plan_svg.clone();
    let mut check_only = args.check_only;
    let (cargo, pass) = match scan(&args.cargo_args, &mut plan_svg, &mut check_only) {
        Ok(scanned) => scanned,
        Err(e) => {
            crate::diag::error(&e);
            return ExitCode::FAILURE;
        }
    };
    let plan = match check(&cargo, plan_svg.as_deref()) {
        Ok((0, plan)) => plan,
        Ok((n, _)) => {
            eprintln!("{n} problem{} with the models (above); not running cargo build", if n == 1 { "" } else { "s" });
            return ExitCode::FAILURE;
        }
        Err(e) => {
            crate::diag::error(&e);
            return ExitCode::FAILURE;
        }
    };
    if check_only {
        return ExitCode::SUCCESS;
    }
    firmware::cargo_build(&pass, &plan)
}

/// Checks and reports every listed model; returns the number of problems, and what to measure
/// after the build.
fn check(cargo: &CargoArgs, plan_svg: Option<&Path>) -> Result<(usize, firmware::Plan), Error> {
    let (packages, target_dir, unlisted) = select(cargo)?;
    if !cargo.json {
        for u in &unlisted {
            u.diag().emit(crate::diag::Level::Warning);
        }
    }
    let host = host_triple();
    let config = CargoConfig::from_environment(&cargo.configs)?;
    let targets = config.targets(&cargo.targets, &host)?;
    // JSON lines on stdout; a closed pipe (`| head`) is not an error worth a panic.
    let emit = |v: Value| {
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    };
    let devices: Vec<String> = targets.iter().map(|t| t.triple.clone()).filter(|t| *t != host).collect();
    let mut plan =
        firmware::Plan { packages: Vec::new(), targets: devices.clone(), message_format: cargo.message_format.clone() };
    if packages.is_empty() {
        if !cargo.json {
            eprintln!("    Checking no models: none listed in [{TABLE}] of the selected packages");
        }
        return Ok((0, plan));
    }
    if let Some(dir) = plan_svg {
        std::fs::create_dir_all(dir).in_file(dir)?;
    }
    let mut problems = 0;
    let out = Out { json: cargo.json, emit: &emit };
    for pkg in &packages {
        for Target { triple: target, source } in &targets {
            let check_dir = target_dir.join("mlf-check").join(target);
            let rustflags = config.rustflags(target, &config::target_cfgs(target))?;
            if !cargo.json {
                let n = pkg.manifest.models.len();
                let s = if n == 1 { "" } else { "s" };
                eprintln!("    Checking {n} model{s} of {} for {target} ({source})", pkg.name);
            }
            let mut reports = Vec::new();
            // Two entries generating one module are refused (the second, naming both).
            let mut names = ModuleNames::default();
            for (i, entry) in pkg.manifest.models.iter().enumerate() {
                let label = entry.name.clone().unwrap_or_else(|| entry.path.display().to_string());
                let pb = if cargo.json { ProgressBar::hidden() } else { spinner(&label) };
                let result = check_model(pkg, entry, (target, &rustflags), &host, &check_dir, &pb).and_then(|r| {
                    names.claim(&pkg.manifest, i, &r.0.model).map_err(|e| e.in_file(&pkg.manifest_path))?;
                    Ok(r)
                });
                pb.finish_and_clear();
                match result {
                    Ok((mut report, desc)) => {
                        // The stack as the module's STACK_BYTES counts it in the profile cargo builds.
                        report.stack = report.stack.map(|s| s.for_debug_assertions(cargo.debug_assertions()));
                        let written = entry.path.display().to_string();
                        problems += out.model(pkg, &written, &report, &entry.budget(i, &pkg.manifest_path))?;
                        if let Some(dir) = plan_svg {
                            out.picture(dir, pkg, &report, &desc)?;
                        }
                        reports.push(report);
                    }
                    Err(e) => {
                        let e = if e.file.is_none() {
                            e.in_file(&pkg.manifest_path).at(format!("{TABLE}.models[{i}]"))
                        } else {
                            e
                        };
                        problems += 1;
                        out.error(pkg, &label, &entry.path.display().to_string(), &e);
                    }
                }
            }
            problems += out.package(pkg, target, &reports);
            if devices.first() == Some(target) {
                let (fw, p) = firmware_package(pkg, reports, &out);
                problems += p;
                plan.packages.push(fw);
            }
        }
    }
    Ok((problems, plan))
}

/// The firmware check's view of `pkg` (its models' reports, its board and memory regions), with
/// the problems found estimating its fit before the link.
fn firmware_package(pkg: &Selected, reports: Vec<MemoryReport>, out: &Out<'_>) -> (firmware::Package, usize) {
    let mut problems = 0;
    let board = pkg.manifest.board.clone().unwrap_or_default();
    let (regions, placements) = match board_regions(pkg, &board) {
        Ok(r) => r,
        Err(e) => {
            out.error(pkg, "", "[package.metadata.mlf]", &e);
            problems += 1;
            Default::default()
        }
    };
    let fw = firmware::Package {
        name: pkg.name.clone(),
        manifest_path: pkg.manifest_path.clone(),
        board: pkg.manifest.board_budget(&pkg.manifest_path),
        reports,
        regions,
        placements,
        stack_region: board.stack_region.clone().unwrap_or_else(|| "RAM".into()),
        app_stack: board.stack.map(|s| s.bytes()),
    };
    if reports_complete(pkg, &fw.reports)
        && let Err(e) = fw.estimate(out.json)
    {
        out.error(pkg, "", "[package.metadata.mlf]", &e);
        problems += 1;
    }
    (fw, problems)
}

/// Whether every listed model of `pkg` was checked.
fn reports_complete(pkg: &Selected, reports: &[MemoryReport]) -> bool {
    reports.len() == pkg.manifest.models.len()
}

/// The package's memory regions: the `MEMORY` of its linker script (`board.memory`, else a
/// `memory.x` beside `Cargo.toml`), then `board.regions` (which replace a region of the same name).
/// The package's memory regions, and which region each input section of its linker script's
/// `SECTIONS` goes to.
fn board_regions(
    pkg: &Selected,
    board: &mlf_build::__private::manifest::Board,
) -> Result<(Vec<regions::Region>, Vec<(String, String)>), Error> {
    let dir = pkg.manifest_path.parent().unwrap_or(Path::new("."));
    let script = match &board.memory {
        Some(p) => Some(dir.join(p)),
        None => Some(dir.join("memory.x")).filter(|p| p.is_file()),
    };
    let (mut out, placements) = match script {
        Some(path) => {
            let text = std::fs::read_to_string(&path).in_file(&path)?;
            (regions::parse(&text, &path)?, regions::placements(&text))
        }
        None => Default::default(),
    };
    for (name, r) in &board.regions {
        out.retain(|x| &x.name != name);
        out.push(regions::Region { name: name.clone(), origin: r.origin, length: r.length.bytes() });
    }
    Ok((out, placements))
}

/// Where the reports go: JSON lines on stdout (`--message-format json`), or the human report
/// on stderr.
struct Out<'a> {
    json: bool,
    emit: &'a dyn Fn(Value),
}

impl Out<'_> {
    /// One model's report and budget verdict; returns the number of problems (0 or 1).
    fn model(&self, pkg: &Selected, entry: &str, report: &MemoryReport, b: &Budget) -> Result<usize, Error> {
        let verdict = budget::check_model(report, b);
        if self.json {
            let mut v = serde_json::to_value(report).map_err(|e| Error::invalid(e.to_string()))?;
            let obj = v.as_object_mut().expect("a report is an object");
            let mut head = serde_json::Map::new();
            head.insert("reason".into(), "mlf-model-report".into());
            head.insert("package".into(), pkg.name.clone().into());
            head.insert("manifest_path".into(), pkg.manifest_path.display().to_string().into());
            head.extend(std::mem::take(obj));
            head.insert("budget".into(), budget_json(b));
            head.insert("within_budget".into(), verdict.is_ok().into());
            (self.emit)(Value::Object(head));
        } else {
            eprint!("{report}");
            if let Some(line) = budget_line(b, report.ram.total, report.flash.total) {
                eprintln!("  {:<22}{line}", "budget");
            }
        }
        match verdict {
            Ok(()) => Ok(0),
            Err(e) => {
                self.error(pkg, &report.model, entry, &e);
                Ok(1)
            }
        }
    }

    /// The picture of a model's plan, written to `dir/<package>-<model>.svg`.
    fn picture(
        &self,
        dir: &Path,
        pkg: &Selected,
        report: &MemoryReport,
        desc: &mlf_build::ModelDesc,
    ) -> Result<(), Error> {
        match mlf_build::__private::svg::picture(desc, &report.model)
            .map(|p| p.with_stack(report.stack.clone()).to_svg())
        {
            Ok(svg) => {
                let out = mlf_build::__private::output::OutputDir::create(dir)?;
                let file = out.write(&format!("{}-{}.svg", pkg.name, report.model), svg.as_bytes())?;
                if !self.json {
                    eprintln!("  {:<22}{}", "plan picture", file.display());
                }
            }
            Err(e) if !self.json => eprintln!("  {:<22}none: {e}", "plan picture"),
            Err(_) => {}
        }
        Ok(())
    }

    /// The package's totals and its crate budget verdict (when every model was checked);
    /// returns the number of problems (0 or 1).
    fn package(&self, pkg: &Selected, target: &str, reports: &[MemoryReport]) -> usize {
        let crate_budget = pkg.manifest.crate_budget(&pkg.manifest_path);
        let board = pkg.manifest.board_budget(&pkg.manifest_path);
        let totals = Totals::of(reports);
        let arenas = SharedArena::of(&reports.iter().collect::<Vec<_>>());
        // The models together within the crate's budget, and within the board (the whole
        // firmware is measured against it after the build).
        let verdict = if reports.len() == pkg.manifest.models.len() {
            budget::check_crate(&pkg.name, reports, &crate_budget)
                .and_then(|()| budget::check_crate(&pkg.name, reports, &board))
        } else {
            Ok(())
        };
        if self.json {
            (self.emit)(json!({
                "reason": "mlf-package-report",
                "package": pkg.name,
                "manifest_path": pkg.manifest_path.display().to_string(),
                "target": target,
                "models": reports.iter().map(|r| r.model.clone()).collect::<Vec<_>>(),
                "ram": totals.ram,
                "flash": totals.flash,
                "external_param_bytes": totals.external_param_bytes,
                "shared_arenas": arenas,
                "budget": budget_json(&crate_budget),
                "within_budget": verdict.is_ok(),
            }));
        } else if reports.len() > 1 || !crate_budget.is_empty() {
            for a in &arenas {
                let parts: Vec<String> = a.parts.iter().map(|(m, b)| format!("{m} {b}")).collect();
                eprintln!(
                    "shared arena {}: {} bytes ({}), the largest part (on arenas of their own: {} bytes); parts: {}",
                    a.name,
                    a.bytes,
                    human(a.bytes),
                    a.apart(),
                    parts.join(", ")
                );
            }
            eprintln!(
                "crate {}: static RAM {} bytes, flash {} bytes, external parameters {} bytes{}",
                pkg.name,
                totals.ram,
                totals.flash,
                totals.external_param_bytes,
                if arenas.is_empty() { "" } else { " (each shared arena counted once)" }
            );
            if let Some(line) = budget_line(&crate_budget, totals.ram, totals.flash) {
                eprintln!("  {:<22}{line}", "budget");
            }
        }
        match verdict {
            Ok(()) => 0,
            Err(e) => {
                self.error(pkg, "", "[package.metadata.mlf]", &e);
                1
            }
        }
    }

    /// A problem: a JSON line (with `--message-format json`: the file, member and field the
    /// error names, and where `needle` stands in the manifest) and `error: …` on stderr.
    fn error(&self, pkg: &Selected, model: &str, needle: &str, e: &Error) {
        if self.json {
            (self.emit)(span::error_line(&pkg.name, &pkg.manifest_path, model, needle, e));
        }
        let mut diag = crate::diag::Diag::of(e);
        if e.file.as_deref() != Some(pkg.manifest_path.as_path()) {
            let text = std::fs::read_to_string(&pkg.manifest_path).unwrap_or_default();
            if let Some(at) = span::position_of(&text, needle) {
                diag = diag.note(format!("the model is listed at {}:{}:{}", pkg.manifest_path.display(), at.0, at.1));
            }
        }
        diag.emit(crate::diag::Level::Error);
    }
}
