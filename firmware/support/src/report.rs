//! The lines a test program prints, parsed by the `device-tests` crate:
//!
//! ```text
//! mlf-device case=0 match=bit-exact max_diff=0 result=PASS instructions=22640 stack=2420
//! mlf-device model=digits target=arm cases=10 passed=10 bit_exact=10 result=PASS instructions=22640 stack=2420
//! ```
//!
//! `max_diff` is the largest difference of an element (integers by value, floats in units in
//! the last place). `instructions` and `stack` of the summary are those of the first case (the figure per
//! inference); `max_stack` is the deepest of all cases (and of a first run, see
//! [`Report::first_run`]).

use crate::Cost;
use crate::check::{Comparison, Match};
use crate::out::{Line, exit};

/// The results of a program's cases.
pub struct Report {
    model: &'static str,
    cases: u64,
    passed: u64,
    bit_exact: u64,
    first: Option<Cost>,
    first_run: Option<Cost>,
    max_stack: usize,
    overflowed: bool,
    stated_stack: Option<usize>,
    overhead: Option<(u64, u64, Option<u64>)>,
    measured: [(&'static str, u64); 8],
}

impl Report {
    /// Starts the instruction counter and a report for `model`.
    pub fn start(model: &'static str) -> Report {
        crate::count::start();
        Report {
            model,
            cases: 0,
            passed: 0,
            bit_exact: 0,
            first: None,
            first_run: None,
            max_stack: 0,
            overflowed: false,
            stated_stack: None,
            overhead: None,
            measured: [("", 0); 8],
        }
    }

    /// Records and prints a case: `compared` is how its outputs compared; it passes when
    /// bit-exact, or close when `bit_exact_required` is false.
    pub fn case(&mut self, compared: Comparison, bit_exact_required: bool, cost: &Cost) {
        let result = compared.result;
        let pass = match result {
            Match::BitExact => true,
            Match::Close => !bit_exact_required,
            Match::Differs => false,
        };
        let mut line = Line::new();
        line.text("mlf-device")
            .count("case", self.cases)
            .field("match", result.name())
            .count("max_diff", compared.max_distance)
            .field("result", if pass { "PASS" } else { "FAIL" });
        cost_fields(&mut line, cost);
        line.print();
        self.cases += 1;
        self.passed += u64::from(pass);
        self.bit_exact += u64::from(result == Match::BitExact);
        self.first.get_or_insert(*cost);
        self.max_stack = self.max_stack.max(cost.stack);
        self.overflowed |= cost.stack_overflowed;
    }

    /// Records and prints the cost of a first run made before the cases, for models whose
    /// first run does one-time work (a kmodel's plan is parsed then): the cases then show the
    /// cost per inference, and the summary adds `first_run_instructions`.
    pub fn first_run(&mut self, cost: &Cost) {
        let mut line = Line::new();
        line.text("mlf-device first_run");
        cost_fields(&mut line, cost);
        line.print();
        self.first_run = Some(*cost);
        self.max_stack = self.max_stack.max(cost.stack);
        self.overflowed |= cost.stack_overflowed;
    }

    /// Records the stack the model's module states a run needs (its `STACK_BYTES`), printed
    /// in the summary as `stated_stack` beside the measured `max_stack`.
    pub fn stated_stack(&mut self, bytes: usize) {
        self.stated_stack = Some(bytes);
    }

    /// Records the instructions per inference of `run()`, of the model's kernels called alone
    /// and of a TVM-style executor over them (see [`crate::overhead`]), each measured over
    /// [`crate::overhead::REPS`] inferences, printed in the summary.
    pub fn overhead(&mut self, run: u64, kernels: u64, peer: Option<u64>) {
        self.overhead = Some((run, kernels, peer));
    }

    /// Records a figure of the program's own (`key=n` in the summary; at most 8, more are
    /// dropped).
    pub fn measured(&mut self, key: &'static str, n: u64) {
        if let Some(slot) = self.measured.iter_mut().find(|(k, _)| k.is_empty()) {
            *slot = (key, n);
        }
    }

    /// Prints an error that stops the program and ends it: `what` (one word, such as `run`)
    /// failed, with what the runtime's error says when there is one.
    pub fn fail(&self, what: &str, error: Option<&mlf_runtime::Error>) -> ! {
        let mut line = Line::new();
        line.text("mlf-device").field("model", self.model).field("error", what).field("result", "FAIL");
        if let Some(e) = error {
            describe(&mut line, e);
        }
        line.print();
        exit(1)
    }

    /// Prints the summary and ends QEMU: status 0 when every case passed (and there was one).
    pub fn finish(&self) -> ! {
        let ok = self.cases > 0 && self.passed == self.cases && !self.overflowed;
        let mut line = Line::new();
        line.text("mlf-device")
            .field("model", self.model)
            .field("target", if cfg!(target_arch = "arm") { "arm" } else { "riscv64" })
            .count("cases", self.cases)
            .count("passed", self.passed)
            .count("bit_exact", self.bit_exact)
            .field("result", if ok { "PASS" } else { "FAIL" });
        cost_fields(&mut line, &self.first.unwrap_or_default());
        line.count("max_stack", self.max_stack as u64);
        if let Some(s) = self.stated_stack {
            line.count("stated_stack", s as u64);
        }
        if let Some((run, kernels, peer)) = self.overhead {
            line.count("run_instructions", run).count("kernels_instructions", kernels);
            if let Some(p) = peer {
                line.count("peer_instructions", p);
            }
        }
        if let Some(first) = &self.first_run {
            line.count("first_run_instructions", first.instructions);
        }
        for (key, n) in self.measured.iter().filter(|(k, _)| !k.is_empty()) {
            line.count(key, *n);
        }
        line.print();
        exit(if ok { 0 } else { 1 })
    }
}

fn cost_fields(line: &mut Line, cost: &Cost) {
    line.count("instructions", cost.instructions).count("stack", cost.stack as u64);
    if cost.stack_overflowed {
        line.field("stack_overflowed", "yes");
    }
}

/// The runtime error's variant and fields, without `core::fmt` (which would add about 12 KB
/// of formatting code to every program's flash).
fn describe(line: &mut Line, e: &mlf_runtime::Error) {
    use mlf_runtime::Error;
    match e {
        Error::Busy => line.field("cause", "busy"),
        Error::OperatorFailed { index, function, code, message } => line
            .field("cause", "operator-failed")
            .count("operator", u64::from(*index))
            .field("function", function)
            .text(" code=")
            .text(if *code < 0 { "-" } else { "" })
            .number(u64::from(code.unsigned_abs()))
            .text(" message: ")
            .text(message.as_str()),
        Error::WorkspaceExhausted { requested, available } => {
            line.field("cause", "workspace-exhausted").count("requested", *requested).count("available", *available)
        }
        Error::BadWorkspaceFree => line.field("cause", "bad-workspace-free"),
        Error::Param(p) => line.field("cause", "parameter").field("id", p.id.as_str()).field("path", p.path.as_str()),
        Error::Kmodel(_) => line.field("cause", "kmodel"),
        _ => line.field("cause", "other"),
    };
}
