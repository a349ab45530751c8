//! What cargo's configuration says about the build: the target (`build.target`) and the flags
//! rustc gets for it (`[build] rustflags`, `[target.<triple>]` and `[target.'cfg(…)']`
//! `rustflags`), read the way cargo reads them, so that `cargo mlf build` checks and reports
//! for the target cargo builds:
//!
//! - files: `.cargo/config.toml` (or the older `.cargo/config`, which wins when both exist) in
//!   the current folder and every folder above it, then `$CARGO_HOME/config.toml`; a file
//!   nearer the current folder wins, arrays are joined (the nearer one's items last);
//! - environment: `CARGO_BUILD_TARGET`, `CARGO_BUILD_RUSTFLAGS`,
//!   `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`, over the files;
//! - command line: `--config KEY=VALUE` or `--config FILE`, over the environment, and
//!   `--target`, over everything;
//! - rustflags: `CARGO_ENCODED_RUSTFLAGS`, else `RUSTFLAGS`, else every matching
//!   `target.<triple>.rustflags` and `target.<cfg>.rustflags` joined, else `build.rustflags`.
//!
//! The triple of a `build.target` ending in `.json` (a custom target's file) is the file's stem.

use std::path::{Path, PathBuf};

use mlf_build::Error;
use toml::Value;

mod cfg;

/// One source of configuration, in increasing precedence.
#[derive(Clone, Debug)]
struct Layer {
    /// Where it comes from, for messages (`/x/.cargo/config.toml`, `--config`).
    source: String,
    /// Its table.
    table: toml::Table,
}

/// Cargo's configuration as seen from one folder.
#[derive(Clone, Debug, Default)]
pub struct CargoConfig {
    layers: Vec<Layer>,
    /// Environment variables that matter here.
    env: Vec<(String, String)>,
}

/// A target triple and where it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The triple (the file stem of a custom target's JSON file).
    pub triple: String,
    /// `--target`, `CARGO_BUILD_TARGET`, `build.target in /x/.cargo/config.toml`, `the host`.
    pub source: String,
}

/// Reads a config file (a missing one is no layer).
fn read_layer(path: &Path) -> Result<Option<Layer>, Error> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| Error::invalid(format!("not valid TOML: {}", e.message())).in_file(path))?;
    Ok(Some(Layer { source: path.display().to_string(), table }))
}

/// The config file of the `.cargo` folder `dir`: `config` (cargo's older name, which wins
/// when both exist) or `config.toml`.
fn file_in(dir: &Path) -> Option<PathBuf> {
    ["config", "config.toml"].iter().map(|f| dir.join(f)).find(|p| p.is_file())
}

impl CargoConfig {
    /// The configuration seen from `cwd`: files above it, `cargo_home`'s, then `env`
    /// (name, value) and the `--config` arguments `cli`.
    pub fn load(
        cwd: &Path,
        cargo_home: Option<&Path>,
        env: Vec<(String, String)>,
        cli: &[String],
    ) -> Result<CargoConfig, Error> {
        let mut layers = Vec::new();
        let mut seen = Vec::new();
        // Nearest first, then reversed: the nearest file has the highest precedence.
        for dir in cwd.ancestors() {
            let dot = dir.join(".cargo");
            if let Some(file) = file_in(&dot) {
                layers.extend(read_layer(&file)?);
                seen.push(dot.canonicalize().unwrap_or(dot));
            }
        }
        if let Some(home) = cargo_home {
            let canonical = home.canonicalize().unwrap_or(home.to_path_buf());
            if !seen.contains(&canonical) {
                if let Some(file) = file_in(home) {
                    layers.extend(read_layer(&file)?);
                }
            }
        }
        layers.reverse();
        let mut config = CargoConfig { layers, env };
        for arg in cli {
            config.layers.push(cli_layer(arg, cwd)?);
        }
        Ok(config)
    }

    /// The configuration seen from the current folder, with this process's environment.
    pub fn from_environment(cli: &[String]) -> Result<CargoConfig, Error> {
        let cwd = std::env::current_dir().map_err(Error::from)?;
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        let env = std::env::vars().filter(|(k, _)| k.starts_with("CARGO_") || k == "RUSTFLAGS").collect();
        CargoConfig::load(&cwd, home.as_deref(), env, cli)
    }

    fn env(&self, name: &str) -> Option<&str> {
        self.env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// `key` (a dotted path) in every layer that sets it, lowest precedence first, with the
    /// layer.
    fn values<'s>(&'s self, key: &[&str]) -> impl Iterator<Item = (&'s Layer, &'s Value)> + 's {
        let key: Vec<String> = key.iter().map(|k| k.to_string()).collect();
        self.layers.iter().filter_map(move |l| {
            let mut v: Option<&Value> = None;
            for (i, k) in key.iter().enumerate() {
                v = if i == 0 { l.table.get(k) } else { v?.get(k) };
            }
            v.map(|v| (l, v))
        })
    }

    /// The targets cargo builds for: every `--target` given, else `build.target` (command
    /// line, `CARGO_BUILD_TARGET`, files), else `host`.
    pub fn targets(&self, given: &[String], host: &str) -> Result<Vec<Target>, Error> {
        if !given.is_empty() {
            return Ok(given.iter().map(|t| Target { triple: triple_of(t), source: "--target".into() }).collect());
        }
        let cli = self.values(&["build", "target"]).filter(|(l, _)| l.source.starts_with("--config")).last();
        if let Some((layer, v)) = cli {
            return targets_in(v, &layer.source);
        }
        if let Some(t) = self.env("CARGO_BUILD_TARGET").filter(|t| !t.trim().is_empty()) {
            return Ok(vec![Target { triple: triple_of(t.trim()), source: "CARGO_BUILD_TARGET".into() }]);
        }
        match self.values(&["build", "target"]).last() {
            Some((layer, v)) => targets_in(v, &format!("build.target in {}", layer.source)),
            None => Ok(vec![Target { triple: host.to_string(), source: "the host".into() }]),
        }
    }

    /// The flags rustc gets for `triple`, whose `cfg` values are `cfgs` (`rustc --print cfg`),
    /// in cargo's order of precedence (see the module's documentation).
    pub fn rustflags(&self, triple: &str, cfgs: &[(String, Option<String>)]) -> Result<Vec<String>, Error> {
        if let Some(encoded) = self.env("CARGO_ENCODED_RUSTFLAGS") {
            return Ok(encoded.split('\u{1f}').filter(|f| !f.is_empty()).map(str::to_string).collect());
        }
        if let Some(flags) = self.env("RUSTFLAGS") {
            return Ok(flags.split_whitespace().map(str::to_string).collect());
        }
        let mut flags = Vec::new();
        let env_name = format!("CARGO_TARGET_{}_RUSTFLAGS", triple.to_ascii_uppercase().replace(['-', '.'], "_"));
        let mut found = false;
        for layer in &self.layers {
            let Some(targets) = layer.table.get("target").and_then(Value::as_table) else { continue };
            for (key, table) in targets {
                let matches = key == triple
                    || (key.starts_with("cfg(") && cfg::matches(key, cfgs).map_err(|e| e.in_file(&layer.source))?);
                if let Some(v) = table.get("rustflags").filter(|_| matches) {
                    flags.extend(flag_list(v));
                    found = true;
                }
            }
        }
        if let Some(v) = self.env(&env_name) {
            flags.extend(v.split_whitespace().map(str::to_string));
            found = true;
        }
        if found {
            return Ok(flags);
        }
        for (_, v) in self.values(&["build", "rustflags"]) {
            flags.extend(flag_list(v));
        }
        if let Some(v) = self.env("CARGO_BUILD_RUSTFLAGS") {
            flags.extend(v.split_whitespace().map(str::to_string));
        }
        Ok(flags)
    }
}

/// A `--config` argument: `KEY=VALUE` (TOML) or the path of a file.
fn cli_layer(arg: &str, cwd: &Path) -> Result<Layer, Error> {
    let source = format!("--config {arg}");
    if let Ok(table) = toml::from_str::<toml::Table>(arg) {
        return Ok(Layer { source, table });
    }
    let path = cwd.join(arg);
    let text = std::fs::read_to_string(&path)
        .map_err(|_| Error::invalid(format!("--config {arg}: neither KEY=VALUE in TOML nor a file")))?;
    let table =
        toml::from_str(&text).map_err(|e| Error::invalid(format!("not valid TOML: {}", e.message())).in_file(&path))?;
    Ok(Layer { source, table })
}

/// A string flag list (split at spaces) or an array of strings.
fn flag_list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        Value::Array(a) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The triple of a `--target` or `build.target` value: a custom target's JSON file stem.
fn triple_of(t: &str) -> String {
    match t.strip_suffix(".json") {
        Some(path) => Path::new(path).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        None => t.to_string(),
    }
}

/// The targets of a `build.target` value (a string or an array of strings).
fn targets_in(v: &Value, source: &str) -> Result<Vec<Target>, Error> {
    let one = |s: &str| Target { triple: triple_of(s), source: source.to_string() };
    match v {
        Value::String(s) => Ok(vec![one(s)]),
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_str) => {
            Ok(a.iter().filter_map(Value::as_str).map(one).collect())
        }
        _ => Err(Error::invalid(format!("{source}: build.target must be a target triple or a list of them"))),
    }
}

/// The `cfg` values of `triple`, from `rustc --print cfg --target triple` (`RUSTC` or `rustc`):
/// names (`unix`) and `key="value"` pairs.
pub fn target_cfgs(triple: &str) -> Vec<(String, Option<String>)> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).args(["--print", "cfg", "--target", triple]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match l.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().trim_matches('"').to_string())),
            None => (l.trim().to_string(), None),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn triples(c: &CargoConfig, given: &[&str]) -> Vec<(String, String)> {
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        c.targets(&given, "x86_64-unknown-linux-gnu").unwrap().into_iter().map(|t| (t.triple, t.source)).collect()
    }

    /// /t/ws/.cargo/config.toml sets build.target; /t/ws/fw/.cargo/config (older name) sets
    /// another one nearer the current folder; $CARGO_HOME sets a third.
    #[test]
    fn build_target_the_way_cargo_finds_it() {
        let t = tempfile::tempdir().unwrap();
        let (ws, fw, home) = (t.path().join("ws"), t.path().join("ws/fw"), t.path().join("home"));
        let cwd = fw.join("src");
        std::fs::create_dir_all(&cwd).unwrap();
        write(&home.join("config.toml"), "[build]\ntarget = \"riscv64gc-unknown-none-elf\"\n");
        let host = CargoConfig::load(&cwd, Some(&home), vec![], &[]).unwrap();
        assert_eq!(triples(&host, &[])[0].0, "riscv64gc-unknown-none-elf");
        write(&ws.join(".cargo/config.toml"), "[build]\ntarget = \"thumbv6m-none-eabi\"\n");
        let c = CargoConfig::load(&cwd, Some(&home), vec![], &[]).unwrap();
        let ws_file = ws.join(".cargo/config.toml").display().to_string();
        assert_eq!(triples(&c, &[]), [("thumbv6m-none-eabi".to_string(), format!("build.target in {ws_file}"))]);
        write(&fw.join(".cargo/config"), "[build]\ntarget = [\"thumbv7em-none-eabihf\", \"custom/my-board.json\"]\n");
        // `config` wins over `config.toml` in the same folder.
        write(&fw.join(".cargo/config.toml"), "[build]\ntarget = \"ignored\"\n");
        let c = CargoConfig::load(&cwd, Some(&home), vec![], &[]).unwrap();
        let got: Vec<String> = triples(&c, &[]).into_iter().map(|t| t.0).collect();
        assert_eq!(got, ["thumbv7em-none-eabihf", "my-board"]);
        // CARGO_BUILD_TARGET over the files, --config over the environment, --target over all.
        let env = vec![("CARGO_BUILD_TARGET".to_string(), "thumbv7m-none-eabi".to_string())];
        let c = CargoConfig::load(&cwd, Some(&home), env.clone(), &[]).unwrap();
        assert_eq!(triples(&c, &[]), [("thumbv7m-none-eabi".to_string(), "CARGO_BUILD_TARGET".to_string())]);
        let cli = ["build.target=\"thumbv8m.main-none-eabi\"".to_string()];
        let c = CargoConfig::load(&cwd, Some(&home), env, &cli).unwrap();
        assert_eq!(triples(&c, &[])[0].0, "thumbv8m.main-none-eabi");
        assert_eq!(triples(&c, &["a", "b"]).len(), 2);
        // Nothing set: the host.
        let empty = CargoConfig::load(t.path(), None, vec![], &[]).unwrap();
        assert_eq!(triples(&empty, &[]), [("x86_64-unknown-linux-gnu".to_string(), "the host".to_string())]);
    }

    #[test]
    fn rustflags_in_cargo_order() {
        let t = tempfile::tempdir().unwrap();
        write(
            &t.path().join(".cargo/config.toml"),
            "[build]\nrustflags = \"-C opt-level=2\"\n\
             [target.thumbv7em-none-eabihf]\nrustflags = [\"-C\", \"link-arg=-Tlink.x\"]\n\
             [target.'cfg(all(target_arch = \"arm\", target_os = \"none\"))']\nrustflags = [\"-C\", \"target-cpu=cortex-m4\"]\n\
             [target.'cfg(target_arch = \"riscv64\")']\nrustflags = [\"-C\", \"target-feature=+m\"]\n",
        );
        let cfgs =
            vec![("target_arch".to_string(), Some("arm".to_string())), ("target_os".into(), Some("none".into()))];
        let c = CargoConfig::load(t.path(), None, vec![], &[]).unwrap();
        let mut flags = c.rustflags("thumbv7em-none-eabihf", &cfgs).unwrap();
        flags.sort();
        assert_eq!(flags, ["-C", "-C", "link-arg=-Tlink.x", "target-cpu=cortex-m4"]);
        // No [target] entry matches: [build] rustflags.
        assert_eq!(c.rustflags("x86_64-unknown-linux-gnu", &[]).unwrap(), ["-C", "opt-level=2"]);
        // RUSTFLAGS wins over the files, CARGO_ENCODED_RUSTFLAGS over RUSTFLAGS.
        let env = vec![("RUSTFLAGS".to_string(), "-C target-cpu=cortex-m7".to_string())];
        let c = CargoConfig::load(t.path(), None, env.clone(), &[]).unwrap();
        assert_eq!(c.rustflags("thumbv7em-none-eabihf", &cfgs).unwrap(), ["-C", "target-cpu=cortex-m7"]);
        let mut env = env;
        env.push(("CARGO_ENCODED_RUSTFLAGS".into(), "-Ctarget-feature=+dsp\u{1f}-g".into()));
        let c = CargoConfig::load(t.path(), None, env, &[]).unwrap();
        assert_eq!(c.rustflags("thumbv7em-none-eabihf", &cfgs).unwrap(), ["-Ctarget-feature=+dsp", "-g"]);
    }

    #[test]
    fn bad_files_and_values_name_the_file() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join(".cargo/config.toml");
        write(&file, "[build\n");
        let e = CargoConfig::load(t.path(), None, vec![], &[]).unwrap_err().to_string();
        assert!(e.contains(&file.display().to_string()) && e.contains("not valid TOML"), "{e}");
        write(&file, "[build]\ntarget = 5\n");
        let c = CargoConfig::load(t.path(), None, vec![], &[]).unwrap();
        let e = c.targets(&[], "host").unwrap_err().to_string();
        assert!(e.contains("build.target in") && e.contains("must be a target triple"), "{e}");
        let e = CargoConfig::load(t.path(), None, vec![], &["no-such-file.toml".into()]).unwrap_err().to_string();
        assert!(e.contains("neither KEY=VALUE"), "{e}");
    }
}
