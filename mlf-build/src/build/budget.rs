//! Memory budgets: a model's (or a crate's models') static RAM and flash checked against the
//! `ram`/`flash` of `[package.metadata.mlf]`, failing with an error that names the model, what
//! it needs and what the budget allows.

use crate::error::{Error, ErrorKind, Result};
use crate::plan::report::{MemoryReport, Totals};
use crate::support::size::human;

/// Limits in bytes (`None`: no limit), with where they were set (for messages).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Static RAM.
    pub ram: Option<u64>,
    /// Flash.
    pub flash: Option<u64>,
    /// Where the budget was set (`package.metadata.mlf.models[0] in /x/Cargo.toml`).
    pub source: String,
}

/// One exceeded limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overrun {
    /// `static RAM` or `flash`.
    pub what: &'static str,
    /// The key in the table (`ram`, `flash`).
    pub key: &'static str,
    /// Bytes needed.
    pub need: u64,
    /// Bytes allowed.
    pub budget: u64,
}

impl Budget {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.ram.is_none() && self.flash.is_none()
    }

    /// The limits that `ram` and `flash` bytes exceed.
    pub fn overruns(&self, ram: u64, flash: u64) -> Vec<Overrun> {
        let mut out = Vec::new();
        if let Some(b) = self.ram.filter(|&b| ram > b) {
            out.push(Overrun { what: "static RAM", key: "ram", need: ram, budget: b });
        }
        if let Some(b) = self.flash.filter(|&b| flash > b) {
            out.push(Overrun { what: "flash", key: "flash", need: flash, budget: b });
        }
        out
    }

    /// Checks `ram` and `flash` bytes needed by `subject` (`model digits`, `crate demo (models
    /// a, b)`): an [`ErrorKind::OverBudget`] naming the subject, the need and the budget
    /// when either is over.
    pub fn check(&self, subject: &str, ram: u64, flash: u64) -> Result<()> {
        let over = self.overruns(ram, flash);
        if over.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = over
            .iter()
            .map(|o| {
                format!(
                    "{subject} needs {} of {}, over the budget of {} by {} bytes",
                    bytes(o.need),
                    o.what,
                    bytes(o.budget),
                    o.need - o.budget
                )
            })
            .collect();
        let keys: Vec<&str> = over.iter().map(|o| o.key).collect();
        Err(Error::new(ErrorKind::OverBudget(format!(
            "{} (budget `{}` set in {})",
            parts.join("; and "),
            keys.join("`, `"),
            self.source
        ))))
    }
}

/// `176 bytes`, or `88192 bytes (86.1 KiB)`.
fn bytes(n: u64) -> String {
    if n < 1024 { format!("{n} bytes") } else { format!("{n} bytes ({})", human(n)) }
}

/// Checks one model's report against its budget.
pub fn check_model(report: &MemoryReport, budget: &Budget) -> Result<()> {
    if !report.planned && budget.ram.is_some() && report.ram.total == 0 {
        return Err(Error::new(ErrorKind::OverBudget(format!(
            "model {} has a RAM budget, but its RAM is not known at build time ({} is not planned by the build step)",
            report.model, report.executor
        )))
        .in_file(&report.file));
    }
    budget
        .check(&format!("model {}", report.model), report.ram.total, report.flash.total)
        .map_err(|e| e.in_file(&report.file))
}

/// Checks the models of crate `package` together against the crate's budget.
pub fn check_crate(package: &str, reports: &[MemoryReport], budget: &Budget) -> Result<()> {
    let t = Totals::of(reports);
    let names: Vec<&str> = reports.iter().map(|r| r.model.as_str()).collect();
    let subject = format!("crate {package} (model{} {})", if reports.len() == 1 { "" } else { "s" }, names.join(", "));
    budget.check(&subject, t.ram, t.flash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(ram: Option<u64>, flash: Option<u64>) -> Budget {
        Budget { ram, flash, source: "package.metadata.mlf.models[0] in Cargo.toml".into() }
    }

    #[test]
    fn within_budget() {
        assert!(budget(Some(176), Some(10_000)).check("model digits", 176, 9_999).is_ok());
        assert!(budget(None, None).check("model digits", u64::MAX, u64::MAX).is_ok());
    }

    #[test]
    fn over_ram_names_model_need_and_budget() {
        let e = budget(Some(100), None).check("model digits", 176, 5).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::OverBudget(_)));
        let m = e.to_string();
        assert_eq!(
            m,
            "model digits needs 176 bytes of static RAM, over the budget of 100 bytes by 76 bytes (budget `ram` set in package.metadata.mlf.models[0] in Cargo.toml)"
        );
    }

    #[test]
    fn over_both() {
        let m = budget(Some(1024), Some(65536)).check("model kws", 88192, 70000).unwrap_err().to_string();
        assert!(m.contains("88192 bytes (86.1 KiB) of static RAM, over the budget of 1024 bytes"), "{m}");
        assert!(
            m.contains(
                "; and model kws needs 70000 bytes (68.4 KiB) of flash, over the budget of 65536 bytes (64.0 KiB)"
            ),
            "{m}"
        );
        assert!(m.contains("budget `ram`, `flash`"), "{m}");
    }

    #[test]
    fn crate_totals() {
        let r = |name: &str, ram: u64, flash: u64| MemoryReport {
            model: name.into(),
            file: "x.tar".into(),
            mlf_module: None,
            executor: "graph".into(),
            target: "t".into(),
            planned: true,
            ram: crate::plan::report::Ram { total: ram, ..Default::default() },
            flash: crate::plan::report::Flash { total: flash, ..Default::default() },
            external_param_bytes: 0,
            stack: None,
            notes: vec![],
            shared_arena: None,
            arena_section: None,
            params_section: None,
        };
        let reports = [r("a", 100, 1000), r("b", 200, 2000)];
        assert!(check_crate("demo", &reports, &budget(Some(300), Some(3000))).is_ok());
        let m = check_crate("demo", &reports, &budget(Some(299), None)).unwrap_err().to_string();
        assert!(m.starts_with("crate demo (models a, b) needs 300 bytes"), "{m}");
        let m = check_model(&reports[1], &budget(None, Some(1999))).unwrap_err().to_string();
        assert!(m.starts_with("x.tar: model b needs 2000 bytes"), "{m}");
    }
}
