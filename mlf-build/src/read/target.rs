//! TVM target strings: `c -keys=cpu -link-params=0 -mcpu=cortex-m7 -system-lib=0`.

use serde::Serialize;

/// A parsed target string: the kind followed by `-key=value` / `-key` options (unknown keys kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The whole string as written.
    pub raw: String,
    /// The target kind (`c`, `llvm`, …).
    pub kind: String,
    /// Options in order; flag options have an empty value.
    pub options: Vec<(String, String)>,
    /// The device key of the `target` object (metadata ≤ v5), if any.
    pub device: Option<i64>,
}

impl Target {
    /// Parses a target string. Never fails: unknown syntax is kept in `raw`.
    pub fn parse(s: &str, device: Option<i64>) -> Target {
        let mut words = s.split_whitespace();
        let kind = words.next().unwrap_or_default().to_string();
        let options = words
            .filter_map(|w| {
                let w = w.strip_prefix('-')?;
                let w = w.strip_prefix('-').unwrap_or(w);
                Some(match w.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (w.to_string(), String::new()),
                })
            })
            .collect();
        Target { raw: s.to_string(), kind, options, device }
    }

    /// The value of an option, if present.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The target triple's architecture, from `-mtriple` (LLVM targets), if any.
    pub fn triple_arch(&self) -> Option<&str> {
        self.option("mtriple").and_then(|t| t.split('-').next())
    }

    /// True when the target emits Arm Cortex-M DSP kernels (`-keys=arm_cpu`).
    pub fn is_arm_cpu(&self) -> bool {
        self.option("keys").is_some_and(|k| k.split(',').any(|k| k == "arm_cpu"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let t = Target::parse("llvm -keys=cpu -link-params=0 -mattr=+sve -mtriple=aarch64-linux-gnu", None);
        assert_eq!(t.kind, "llvm");
        assert_eq!(t.option("mtriple"), Some("aarch64-linux-gnu"));
        assert_eq!(t.triple_arch(), Some("aarch64"));
        let t = Target::parse("c -keys=cpu ", Some(1));
        assert_eq!(t.kind, "c");
        assert_eq!(t.option("keys"), Some("cpu"));
    }
}
