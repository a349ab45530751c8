//! `inspect`'s verdict on where a model runs: the host and every device target mlf supports,
//! each with the reasons the build would refuse it (the same check, [`runnable::refusals`]) and
//! whether a C compiler for it is installed.

use serde_json::{Value, json};

use crate::build::libraries::UserLibraries;
use crate::build::runnable;
use crate::build::targets::DEVICE_TARGETS;
use crate::model::ModelDesc;

/// The verdict for one target.
pub struct RunsOn {
    /// The target triple.
    pub target: String,
    /// Whether it is the host.
    pub host: bool,
    /// Why the model cannot run there (empty: it can).
    pub why_not: Vec<String>,
    /// When no C compiler for the target is installed, what to install.
    pub no_compiler: Option<String>,
}

/// The verdict for the host (when known) and every device target, without user-supplied
/// libraries.
pub fn runs_on(desc: &ModelDesc, host: Option<&str>) -> Vec<RunsOn> {
    let libs = UserLibraries::default();
    let host_target = host.unwrap_or("");
    let targets = host.into_iter().chain(DEVICE_TARGETS.iter().copied().filter(|t| Some(*t) != host));
    targets
        .map(|t| RunsOn {
            target: t.to_string(),
            host: t == host_target,
            why_not: runnable::refusals(desc, t, &libs),
            no_compiler: host.and_then(|h| runnable::missing_compiler(desc, t, h)),
        })
        .collect()
}

/// The JSON of the verdicts: `[{"target", "host", "runs", "why_not": […], "c_compiler": null |
/// "no C compiler for …"}]`.
pub fn json(runs: &[RunsOn]) -> Value {
    Value::Array(
        runs.iter()
            .map(|r| {
                json!({
                    "target": r.target,
                    "host": r.host,
                    "runs": r.why_not.is_empty(),
                    "why_not": r.why_not,
                    "c_compiler": r.no_compiler,
                })
            })
            .collect(),
    )
}

/// The table's section: one line per target, `yes` or `no:` with every reason.
pub fn table(runs: &[RunsOn]) -> String {
    let mut s = String::from("\nruns on\n");
    for r in runs {
        let name = if r.host { format!("{} (host)", r.target) } else { r.target.clone() };
        let verdict = match r.why_not.as_slice() {
            [] => "yes".to_string(),
            [one] => format!("no: {one}"),
            many => format!("no:\n{}", many.iter().map(|w| format!("      - {w}")).collect::<Vec<_>>().join("\n")),
        };
        s.push_str(&format!("  {name:<34} {verdict}\n"));
        if let Some(c) = &r.no_compiler {
            s.push_str(&format!("  {:<34} ({c})\n", ""));
        }
    }
    s
}
