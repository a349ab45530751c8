//! The `mlf-device …` lines the programs print (see `firmware/support/src/report.rs`): one per
//! case, an optional `first_run` line, and a summary line with `model=`.

use std::collections::BTreeMap;

/// The `key=value` fields of one line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields(pub BTreeMap<String, String>);

impl Fields {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The value of `key` as a number.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }
}

/// What a program printed.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// One entry per case, in order.
    pub cases: Vec<Fields>,
    /// The first run measured apart (kmodels), if any.
    pub first_run: Option<Fields>,
    /// The summary line, if the program got that far.
    pub summary: Option<Fields>,
    /// Lines of the protocol that report an error or a panic.
    pub errors: Vec<String>,
}

impl Report {
    /// Parses the program's standard output.
    pub fn parse(stdout: &str) -> Report {
        let mut r = Report::default();
        for line in stdout.lines() {
            let Some(rest) = line.strip_prefix("mlf-device") else { continue };
            let mut fields = Fields::default();
            let mut words = rest.split_whitespace().peekable();
            let first_run = words.peek() == Some(&"first_run");
            for word in words {
                if let Some((k, v)) = word.split_once('=') {
                    fields.0.insert(k.to_string(), v.to_string());
                }
            }
            if rest.starts_with(" panic") || fields.get("error").is_some() {
                r.errors.push(line.to_string());
            } else if first_run {
                r.first_run = Some(fields);
            } else if fields.get("model").is_some() {
                r.summary = Some(fields);
            } else if fields.get("case").is_some() {
                r.cases.push(fields);
            }
        }
        r
    }

    /// The summary, or a panic showing what was printed instead.
    pub fn summary(&self, stdout: &str) -> &Fields {
        self.summary.as_ref().unwrap_or_else(|| panic!("the program printed no summary:\n{stdout}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cases_first_run_summary_and_errors() {
        let text = "boot\nmlf-device first_run instructions=60 stack=12\n\
                    mlf-device case=0 match=bit-exact max_diff=0 result=PASS instructions=40 stack=8\n\
                    mlf-device model=m target=arm cases=1 passed=1 bit_exact=1 result=PASS instructions=40 stack=8\n";
        let r = Report::parse(text);
        assert_eq!(r.cases.len(), 1);
        assert_eq!(r.cases[0].get("match"), Some("bit-exact"));
        assert_eq!(r.first_run.as_ref().and_then(|f| f.number("instructions")), Some(60));
        assert_eq!(r.summary(text).number("passed"), Some(1));
        assert!(r.errors.is_empty());
        let r = Report::parse("mlf-device panic at src/main.rs:3\nmlf-device model=m error=run result=FAIL\n");
        assert_eq!(r.errors.len(), 2);
        assert!(r.summary.is_none());
    }
}
