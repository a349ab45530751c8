//! Running a device program under QEMU: the packed parameters written into the machine's
//! partition with QEMU's loader, semihosting rooted in the run's folder (where the program reads
//! `inputs/` and writes `outputs/`), exact instruction counting (`-icount shift=0`), a time
//! limit, and the program's `mlf-run …` lines read back and printed.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mlf_build::Error;

use super::machine::Machine;
use crate::io_error::InFile;

/// One measured run, as the program reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Measured {
    /// Instructions.
    pub instructions: u64,
    /// Stack high-water in bytes.
    pub stack: u64,
    /// The stack reached the end of the painted region: `stack` is a lower bound.
    pub overflowed: bool,
}

/// One operator of a profiled run (`mlf-run op index=… unit=… instructions=… name=…`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Op {
    /// Its index in the run.
    pub index: u64,
    /// Its name (a TVM function, a kmodel layer).
    pub name: String,
    /// `cpu` or `kpu`.
    pub unit: String,
    /// Instructions between the hook's two counter reads.
    pub instructions: u64,
}

impl Op {
    /// Reads the words after `op` (the name is last and may hold anything but a line break).
    fn parse(rest: &str) -> Option<Op> {
        let (head, name) = rest.split_once(" name=")?;
        let mut op = Op { name: name.to_string(), ..Op::default() };
        for (k, v) in head.split_whitespace().filter_map(|w| w.split_once('=')) {
            match k {
                "index" => op.index = v.parse().ok()?,
                "unit" => op.unit = v.to_string(),
                // A device counts instructions, the host times nanoseconds.
                "instructions" | "nanos" => op.instructions = v.parse().ok()?,
                _ => {}
            }
        }
        Some(op)
    }
}

/// The profile hook's own cost (`mlf-run op_overhead pairs=… instructions=… inside=…`): `pairs`
/// empty operators took `instructions` in all, of which `inside` between their two counter
/// reads (what each operator's figure holds of the hook).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookCost {
    /// Empty operators timed.
    pub pairs: u64,
    /// Their instructions, hook calls and counter reads included.
    pub instructions: u64,
    /// Of those, the instructions between each pair's two counter reads.
    pub inside: u64,
}

impl HookCost {
    /// Instructions one operator's hook calls add to the run.
    pub fn per_operator(&self) -> f64 {
        self.instructions as f64 / self.pairs.max(1) as f64
    }

    /// Instructions of them each operator's figure holds.
    pub fn inside_per_operator(&self) -> f64 {
        self.inside as f64 / self.pairs.max(1) as f64
    }
}

/// What the program reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The inference.
    pub run: Option<Measured>,
    /// A kmodel's first run (which also decodes the model).
    pub first_run: Option<Measured>,
    /// The stack the model's module states one run needs (`STACK_BYTES`; TVM modules).
    pub stated_stack: Option<u64>,
    /// The measured run's operators (`--profile`), in order.
    pub ops: Vec<Op>,
    /// Operators the program had no room to profile.
    pub ops_missing: u64,
    /// The hook's own cost, as the profiled program timed it on empty operators.
    pub op_overhead: Option<HookCost>,
    /// The program's error.
    pub error: Option<String>,
    /// Anything else it printed.
    pub other: Vec<String>,
}

impl Report {
    /// Reads the program's standard output.
    pub fn parse(stdout: &str) -> Report {
        let mut r = Report::default();
        for line in stdout.lines() {
            let Some(rest) = line.strip_prefix("mlf-run ") else {
                r.other.push(line.to_string());
                continue;
            };
            if let Some(e) = rest.strip_prefix("error: ") {
                r.error = Some(e.to_string());
                continue;
            }
            if let Some(op) = rest.strip_prefix("op ").and_then(Op::parse) {
                r.ops.push(op);
                continue;
            }
            if let Some(v) = rest.strip_prefix("op_overhead ") {
                let mut c = HookCost::default();
                for (k, v) in v.split_whitespace().filter_map(|w| w.split_once('=')) {
                    let v = v.parse().unwrap_or_default();
                    match k {
                        "pairs" => c.pairs = v,
                        "instructions" | "nanos" => c.instructions = v,
                        "inside" => c.inside = v,
                        _ => {}
                    }
                }
                r.op_overhead = Some(c);
                continue;
            }
            if let Some(v) = rest.strip_prefix("op_missing count=") {
                r.ops_missing = v.trim().parse().unwrap_or_default();
                continue;
            }
            if let Some(v) = rest.strip_prefix("stated stack=") {
                r.stated_stack = v.trim().parse().ok();
                continue;
            }
            let mut words = rest.split_whitespace();
            let what = words.next().unwrap_or_default();
            let mut m = Measured::default();
            for (k, v) in words.filter_map(|w| w.split_once('=')) {
                match k {
                    "instructions" | "nanos" => m.instructions = v.parse().unwrap_or_default(),
                    "stack" => m.stack = v.parse().unwrap_or_default(),
                    "stack_overflowed" => m.overflowed = v == "yes",
                    _ => {}
                }
            }
            match what {
                "run" => r.run = Some(m),
                "first_run" => r.first_run = Some(m),
                _ => r.other.push(line.to_string()),
            }
        }
        r
    }

    /// Fails when the painted stack shows a run used more than the module states
    /// (`STACK_BYTES`): the figure a device is sized from would be wrong.
    pub fn check_stack(&self) -> Result<(), Error> {
        let Some(stated) = self.stated_stack else { return Ok(()) };
        // A kmodel's first run (which also decodes the model) is a run too.
        let Some(run) = self.first_run.iter().chain(&self.run).max_by_key(|m| (m.overflowed, m.stack)) else {
            return Ok(());
        };
        if run.stack > stated || run.overflowed {
            return Err(Error::unsupported(format!(
                "the run used {}{} bytes of stack, more than the {} its module states (STACK_BYTES): \
                 a device sized from mlf's figure would overflow its stack; please report this model",
                grouped(run.stack),
                if run.overflowed { " or more" } else { "" },
                grouped(stated)
            )));
        }
        Ok(())
    }
}

/// The file to write into `machine`'s parameter partition: `from` itself when it is a packed
/// archive, else `from` (a split folder) packed into `staging/params.tar`. An error when the
/// machine has no partition or the archive does not fit it.
pub fn params_image(machine: &Machine, from: &Path, staging: &Path) -> Result<PathBuf, Error> {
    let Some(partition) = machine.params else {
        return Err(Error::invalid(format!(
            "{} ({}) has no room for a parameter partition: use --params embedded",
            machine.target, machine.about
        )));
    };
    let image = if from.is_dir() {
        let packed = staging.join("params.tar");
        mlf_build::pack_folder(from, &packed)?;
        packed
    } else {
        from.to_path_buf()
    };
    let bytes = std::fs::metadata(&image).in_file(&image)?.len();
    if bytes > partition.length {
        return Err(Error::invalid(format!(
            "the packed parameters are {bytes} bytes, more than the {} bytes of {}'s parameter partition",
            partition.length, machine.target
        ))
        .in_file(&image));
    }
    Ok(image)
}

/// Runs `elf` on `machine` with `qemu`, in `staging` (the folder holding `inputs/` and
/// `outputs/`), with `params` written into the partition; kills QEMU after `limit`.
pub fn run(
    machine: &Machine,
    qemu: &Path,
    elf: &Path,
    staging: &Path,
    params: Option<&Path>,
    limit: Duration,
) -> Result<Report, Error> {
    let mut cmd = Command::new(qemu);
    cmd.current_dir(staging).args(machine.args).args(["-nographic", "-monitor", "none", "-serial", "none"]).args([
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        "shift=0",
    ]);
    if let (Some(p), Some(partition)) = (params, machine.params) {
        cmd.arg("-device").arg(format!("loader,file={},addr={:#x},force-raw=on", p.display(), partition.origin));
    }
    cmd.arg("-kernel").arg(elf).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    eprintln!("running {}", elf.display());
    eprintln!("on {} ({})", machine.target, machine.about);
    let mut child = cmd.spawn().map_err(|e| Error::invalid(format!("cannot run {}: {e}", qemu.display())))?;
    // Both pipes are read while QEMU runs, so a chatty program cannot block on a full pipe.
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(Error::from)? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    let report = Report::parse(&stdout);
    for line in &report.other {
        eprintln!("{line}");
    }
    eprint!("{stderr}");
    let failed = |why: String| Err(Error::invalid(format!("the model failed on {}: {why}", machine.target)));
    match (status, &report.error) {
        (None, _) => failed(format!(
            "it did not finish within {} s (--timeout); a program that faults without a handler, or a hang, ends so",
            limit.as_secs()
        )),
        (Some(_), Some(e)) => failed(e.clone()),
        (Some(s), None) if !s.success() => failed(format!("QEMU ended with {s}")),
        (Some(_), None) if report.run.is_none() => failed("the program reported no run".into()),
        (Some(_), None) => Ok(report),
    }
}

/// `12345678` as `12,345,678`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints what the device measured, and the program's flash and static RAM from its ELF.
pub fn print(machine: &Machine, report: &Report, elf: &Path) {
    eprintln!("device {} ({}), QEMU -icount shift=0:", machine.target, machine.about);
    let res = machine.resolution();
    let exact =
        if res == 1 { format!("exact ({})", machine.counter) } else { format!("exact to {res} ({})", machine.counter) };
    if let Some(first) = &report.first_run {
        eprintln!("  {:<28}{} instructions (it also decodes the model)", "first run", grouped(first.instructions));
    }
    if let Some(run) = &report.run {
        eprintln!("  {:<28}{} instructions, {exact}", "instructions per inference", grouped(run.instructions));
        let stack = report.first_run.iter().chain([run]).map(|m| m.stack).max().unwrap_or(0);
        let lower = report.first_run.iter().chain([run]).any(|m| m.overflowed);
        let stated = report.stated_stack.map(|s| format!("; the module states STACK_BYTES = {}", grouped(s)));
        eprintln!(
            "  {:<28}{} bytes{}{}",
            "stack high-water",
            grouped(stack),
            if lower { " or more (it used all of the painted stack)" } else { " (painted stack)" },
            stated.unwrap_or_default()
        );
    }
    match mlf_build::__private::measure_firmware(elf) {
        Ok(m) => eprintln!(
            "  {:<28}flash {} bytes, static RAM {} bytes (the ELF's section table; stack not included)",
            "program",
            grouped(m.flash),
            grouped(m.ram)
        ),
        Err(e) => eprintln!("  {:<28}not measured: {e}", "program"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_program_lines() {
        let r = Report::parse(
            "hello\nmlf-run first_run instructions=60 resolution=40 stack=12 stack_painted=1048576\n\
             mlf-run run instructions=40 resolution=40 stack=8 stack_painted=1048576 stack_overflowed=yes\n",
        );
        assert_eq!(r.first_run, Some(Measured { instructions: 60, stack: 12, overflowed: false }));
        assert_eq!(r.run, Some(Measured { instructions: 40, stack: 8, overflowed: true }));
        assert_eq!(r.other, ["hello"]);
        let r = Report::parse("mlf-run error: run: workspace exhausted\n");
        assert_eq!(r.error.as_deref(), Some("run: workspace exhausted"));
        let r = Report::parse(
            "mlf-run op index=0 unit=kpu instructions=120 name=k210_conv\n\
             mlf-run op index=1 unit=cpu instructions=80 name=tvmgen_default_fused add\nmlf-run op_missing count=2\n\
             mlf-run op_overhead pairs=32 instructions=4480 inside=1280\n",
        );
        let op = |index, unit: &str, instructions, name: &str| Op {
            index,
            unit: unit.into(),
            instructions,
            name: name.into(),
        };
        assert_eq!(r.ops, [op(0, "kpu", 120, "k210_conv"), op(1, "cpu", 80, "tvmgen_default_fused add")]);
        assert_eq!((r.ops_missing, r.other.len()), (2, 0));
        let c = r.op_overhead.unwrap();
        assert_eq!((c.per_operator(), c.inside_per_operator()), (140.0, 40.0));
        assert_eq!(grouped(22_496_520), "22,496,520");
        assert_eq!(grouped(40), "40");
    }

    #[test]
    fn a_run_deeper_than_the_stated_stack_fails() {
        let line = |stack| format!("mlf-run run instructions=40 resolution=1 stack={stack} stack_painted=4096\n");
        let within = Report::parse(&format!("{}mlf-run stated stack=600\n", line(600)));
        assert_eq!(within.stated_stack, Some(600));
        within.check_stack().unwrap();
        let over = Report::parse(&format!("{}mlf-run stated stack=600\n", line(601)));
        let e = over.check_stack().unwrap_err().to_string();
        assert!(e.contains("601 bytes of stack, more than the 600"), "{e}");
        // A program that states no figure: nothing to check.
        Report::parse(&line(100_000)).check_stack().unwrap();
        // A kmodel's first run counts.
        let first = "mlf-run first_run instructions=60 resolution=1 stack=900 stack_painted=4096\n";
        let e = Report::parse(&format!("{first}{}mlf-run stated stack=600\n", line(500))).check_stack().unwrap_err();
        assert!(e.to_string().contains("900 bytes of stack"), "{e}");
    }
}
