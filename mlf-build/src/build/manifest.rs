//! The `[package.metadata.mlf]` table of a crate's `Cargo.toml`: the models the crate builds and
//! its memory budgets.
//!
//! ```toml
//! [package.metadata.mlf]
//! ram = "256 KiB"              # optional: budget for all models of the crate together
//! flash = "1 MiB"
//! board = { flash = "1 MiB", ram = "320 KiB" }  # optional: what the whole firmware must fit
//!
//! [[package.metadata.mlf.models]]
//! path = "models/digits.tar"   # relative to Cargo.toml
//! name = "digits"              # module name (optional: the model's name or file stem)
//! module = "default"           # MLF module of a multi-module archive (optional)
//! params = "embedded"          # parameter placement: "embedded" (default), "resident", "streamed", "lazy"
//! fp_contract = false          # true: let the C compiler fuse a*b+c (default: -ffp-contract=off)
//! max_static = "256 MiB"       # most static memory the generated module may allocate (the default)
//! arena = "detect"             # optional: the shared arena (mlf_runtime::shared_arena!) the model's arena is in
//! arena_section = ".dtcm"      # optional: the link sections of the arena and the parameters
//! params_section = ".psram_ro"
//! in_place = true              # false: no operator's output shares bytes with its inputs (default: where the C proves it safe)
//! ram = "1 KiB"                # optional: this model's budget
//! flash = "64 KiB"
//! ```
//!
//! Sizes are a number of bytes (`65536`) or a string with a unit: `B`, `KiB`, `MiB`, `GiB`
//! (powers of 1024) or `kB`, `MB`, `GB` (powers of 1000), with an optional fraction
//! (`"1.5 MiB"`) as long as it comes to a whole number of bytes.
//!
//! The same table is read by `cargo mlf build` (through `cargo metadata`) and by build scripts
//! ([`Manifest::read`] of `$CARGO_MANIFEST_DIR/Cargo.toml`), so both enforce the same budgets.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Placement;
use crate::support::size::human;

/// Where the table lives, for messages.
pub const TABLE: &str = "package.metadata.mlf";

/// The `[package.metadata.mlf]` table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Budget of static RAM for all models of the crate together.
    pub ram: Option<Size>,
    /// Budget of flash for all models of the crate together.
    pub flash: Option<Size>,
    /// The board the crate's firmware runs on: the whole linked program must fit its flash and
    /// RAM (`cargo mlf build` measures it after `cargo build`), and so must the models.
    pub board: Option<Board>,
    /// The models, in order.
    #[serde(default)]
    pub models: Vec<ModelEntry>,
}

/// One `[[package.metadata.mlf.models]]` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The model file, relative to the crate's `Cargo.toml`.
    pub path: PathBuf,
    /// Module name `include_model!` uses (default: the model's name, or its file stem).
    pub name: Option<String>,
    /// The MLF module to read from an archive that holds several.
    pub module: Option<String>,
    /// Parameter placement: `"embedded"` (the default: in flash, used in place), `"resident"`
    /// (external, loaded once into a static region), `"streamed"` (external, loaded operator
    /// by operator into a staging buffer) or `"lazy"` (external, in the resident region, each
    /// parameter loaded the first time an operator that uses it runs).
    pub params: Option<Placement>,
    /// `true` lets the C compiler contract `a*b+c` into fused multiply-adds; by default the
    /// model's C is compiled with `-ffp-contract=off` (see [`crate::Model::fp_contract`]).
    pub fp_contract: Option<bool>,
    /// `false` plans the arena without in-place operators (see [`crate::Model::in_place`]).
    pub in_place: Option<bool>,
    /// External parameters: the Ed25519 public key (PEM, relative to `Cargo.toml`) parameter
    /// packs must be signed with (see [`crate::Model::pack_key`]).
    pub pack_key: Option<PathBuf>,
    /// Where a kmodel's KPU layers run, as its `include_model!(…, kpu = …)` says: `"device-model"`
    /// (the default) or `"k210"`; the report and budgets count that backend's memory.
    pub kpu: Option<crate::model::Kpu>,
    /// The most static memory the generated module may allocate (default 256 MiB): see
    /// [`crate::Model::max_static_bytes`].
    pub max_static: Option<Size>,
    /// The shared arena the model's arena is in: the module `mlf_runtime::shared_arena!`
    /// declares beside the model's (see [`crate::Model::shared_arena`]).
    pub arena: Option<String>,
    /// The link section of the model's arena (see [`crate::Model::arena_section`]).
    pub arena_section: Option<String>,
    /// The link section of the model's parameters (see [`crate::Model::params_section`]).
    pub params_section: Option<String>,
    /// This model's static RAM budget.
    pub ram: Option<Size>,
    /// This model's flash budget.
    pub flash: Option<Size>,
    /// Folders the model's C `#include`s are searched in (a vendor library's headers),
    /// relative to `Cargo.toml`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_dirs: Vec<PathBuf>,
    /// C files (or folders of them) compiled with the model: a vendor library's sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub c_sources: Vec<PathBuf>,
    /// Prebuilt static libraries (`lib<name>.a`, for the target) linked with the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<PathBuf>,
}

/// `board = { flash = "1 MiB", ram = "320 KiB" }`: a board's memory, given once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// Flash (the program image).
    pub flash: Option<Size>,
    /// RAM (static RAM and the stack).
    pub ram: Option<Size>,
    /// The application's own stack, beside the stack mlf bounds for a model's `run()`: both are
    /// counted in the region that holds the stack.
    pub stack: Option<Size>,
    /// The region that holds the stack (default `RAM`, where cortex-m-rt and riscv-rt put it).
    pub stack_region: Option<String>,
    /// The linker script whose `MEMORY` regions the linked firmware must fit (default:
    /// `memory.x` beside `Cargo.toml`, when there is one).
    pub memory: Option<PathBuf>,
    /// Regions declared here instead of (or besides) the linker script's: `RAM = { origin =
    /// 0x20000000, length = "128 KiB" }`.
    #[serde(default)]
    pub regions: std::collections::BTreeMap<String, RegionDecl>,
}

/// A memory region declared in `board.regions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegionDecl {
    /// Its first address.
    pub origin: u64,
    /// Its bytes.
    pub length: Size,
}

/// A size in bytes, written as an integer or a string with a unit (`"64 KiB"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Size(pub u64);

impl Size {
    /// The number of bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", human(self.0))
    }
}

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Size, String> {
        parse_size(s).map(Size)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: a number of bytes or a string such as \"64 KiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Size, E> {
                u64::try_from(v).map(Size).map_err(|_| E::custom(format!("a size cannot be negative ({v})")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Size, E> {
                Err(E::custom(format!(
                    "{v} is not a whole number of bytes; write a string with a unit, such as \"1.5 KiB\""
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

pub use crate::support::size::parse_size;

impl Manifest {
    /// The table from a package's `metadata` value (`package.metadata` of `Cargo.toml`, as
    /// `cargo metadata` reports it) of the package whose manifest is `cargo_toml`: `None` when
    /// it has no `mlf` key. The entries are checked as [`Manifest::check_entries`] does.
    ///
    /// Errors name the file and the field (`…/Cargo.toml: package.metadata.mlf.models[0].ram`).
    pub fn from_package_metadata(metadata: &serde_json::Value, cargo_toml: &Path) -> Result<Option<Manifest>> {
        Manifest::parse_metadata(metadata)
            .and_then(|m| m.map(|m| m.checked(cargo_toml)).transpose())
            .map_err(|e| e.in_file(cargo_toml))
    }

    /// Parses and validates the table (without looking at the model files).
    fn parse_metadata(metadata: &serde_json::Value) -> Result<Option<Manifest>> {
        let Some(table) = metadata.get("mlf") else { return Ok(None) };
        if table.is_null() {
            return Ok(None);
        }
        let m: Manifest = serde_path_to_error::deserialize(table).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { TABLE.to_string() } else { format!("{TABLE}.{path}") };
            Error::invalid(e.into_inner().to_string()).at(field)
        })?;
        m.validate()?;
        Ok(Some(m))
    }

    /// Reads the table from a `Cargo.toml` file: `None` when the file has none. The entries are
    /// checked as [`Manifest::check_entries`] does.
    pub fn read(cargo_toml: &Path) -> Result<Option<Manifest>> {
        let text = std::fs::read_to_string(cargo_toml).map_err(|e| Error::from(e).in_file(cargo_toml))?;
        Manifest::from_toml_str(&text)
            .and_then(|m| m.map(|m| m.checked(cargo_toml)).transpose())
            .map_err(|e| e.in_file(cargo_toml))
    }

    /// Reads the table from the text of a `Cargo.toml` (its entries are not compared with each
    /// other: that needs the crate's folder, see [`Manifest::check_entries`]).
    pub fn from_toml_str(text: &str) -> Result<Option<Manifest>> {
        let doc: serde_json::Value =
            toml::from_str(text).map_err(|e| Error::invalid(format!("not valid TOML: {}", e.message())))?;
        match doc.get("package").and_then(|p| p.get("metadata")) {
            Some(meta) => Manifest::parse_metadata(meta),
            None => Ok(None),
        }
    }

    fn checked(self, cargo_toml: &Path) -> Result<Manifest> {
        self.check_entries(cargo_toml.parent().unwrap_or(Path::new(".")))?;
        Ok(self)
    }

    /// Compares the entries with each other (paths resolved against `crate_dir`): a model
    /// listed twice (the same file, after resolving `.`, `..` and links, and the same MLF
    /// module) is refused, as its memory would be counted twice; so are two entries whose
    /// `name`s (or kmodel file names, which name their modules) give the same module. Module
    /// names that only reading an MLF archive tells are compared by [`ModuleNames`] as the
    /// models are read.
    pub fn check_entries(&self, crate_dir: &Path) -> Result<()> {
        let mut seen: HashMap<(PathBuf, Option<&str>), usize> = HashMap::with_capacity(self.models.len());
        let mut names = ModuleNames::default();
        for (i, m) in self.models.iter().enumerate() {
            let key = (canonical(crate_dir, &m.path), m.module.as_deref());
            if let Some(&j) = seen.get(&key) {
                let module = m.module.as_deref().map(|n| format!(", MLF module {n:?}")).unwrap_or_default();
                return Err(Error::invalid(format!(
                    "lists the same model as {TABLE}.models[{j}] ({}{module}); its memory would be counted twice: \
                     remove one of the two entries",
                    m.path.display()
                ))
                .at(format!("{TABLE}.models[{i}]")));
            }
            seen.insert(key, i);
            if let Some(name) = m.known_module_name() {
                names.claim(self, i, &name)?;
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        for (i, m) in self.models.iter().enumerate() {
            let at = |f: &str| format!("{TABLE}.models[{i}].{f}");
            if m.path.as_os_str().is_empty() {
                return Err(Error::invalid("the model path is empty").at(at("path")));
            }
            if let Some(n) = &m.name {
                if crate::support::names::module_ident(n) != *n {
                    return Err(Error::invalid(format!(
                        "{n:?} is not a usable module name (a lowercase Rust identifier such as {:?})",
                        crate::support::names::module_ident(n)
                    ))
                    .at(at("name")));
                }
            }
            if let Some(a) = m.arena.as_deref().filter(|a| !crate::support::names::is_identifier(a)) {
                return Err(Error::invalid(format!(
                    "{a:?} is not a Rust identifier, so it cannot name a shared arena's module (shared_arena!({a}: …))"
                ))
                .at(at("arena")));
            }
            for (key, s) in [("arena_section", &m.arena_section), ("params_section", &m.params_section)] {
                let bad = s.as_deref().and_then(|s| crate::support::section::check(s).err());
                bad.map_or(Ok(()), |e| Err(Error::invalid(e).at(at(key))))?;
            }
        }
        Ok(())
    }

    /// The entry for the model at `model` (a path as given to `Model::open`, relative to
    /// `crate_dir`) and MLF module `module`, with its index.
    pub fn entry_for(&self, crate_dir: &Path, model: &Path, module: Option<&str>) -> Option<(usize, &ModelEntry)> {
        let want = canonical(crate_dir, model);
        self.models
            .iter()
            .enumerate()
            .find(|(_, e)| canonical(crate_dir, &e.path) == want && e.module.as_deref() == module)
    }

    /// The crate-level budget.
    pub fn crate_budget(&self, cargo_toml: &Path) -> crate::build::budget::Budget {
        crate::build::budget::Budget {
            ram: self.ram.map(Size::bytes),
            flash: self.flash.map(Size::bytes),
            source: format!("[{TABLE}] in {}", cargo_toml.display()),
        }
    }
}

impl Manifest {
    /// The board's limits as a budget (empty when no board is given).
    pub fn board_budget(&self, cargo_toml: &Path) -> crate::build::budget::Budget {
        let board = self.board.clone().unwrap_or_default();
        crate::build::budget::Budget {
            ram: board.ram.map(Size::bytes),
            flash: board.flash.map(Size::bytes),
            source: format!("{TABLE}.board in {}", cargo_toml.display()),
        }
    }
}

/// The module names the entries of a table generate, to refuse two entries that would generate
/// the same module (one would hide the other in `include_model!`). Fed with each entry's module
/// name as the models are read (by `cargo mlf build` and [`crate::compile_listed`]).
#[derive(Debug, Default)]
pub struct ModuleNames {
    /// Each module name with the entry that generates it.
    taken: HashMap<String, usize>,
}

impl ModuleNames {
    /// Records that entry `index` of `manifest` generates the module `name`; an error naming
    /// both entries when another entry generates it already (the same entry may claim its name
    /// again).
    pub fn claim(&mut self, manifest: &Manifest, index: usize, name: &str) -> Result<()> {
        match self.taken.get(name) {
            Some(&j) if j != index => {
                let path = |k: usize| manifest.models.get(k).map(|e| e.path.display().to_string()).unwrap_or_default();
                Err(Error::invalid(format!(
                    "{} generates the module `{name}`, as {TABLE}.models[{j}] ({}) does; give one of the two \
                     entries another module name with its `name` key (name = \"{name}_2\")",
                    path(index),
                    path(j)
                ))
                .at(format!("{TABLE}.models[{index}]")))
            }
            Some(_) => Ok(()),
            None => {
                self.taken.insert(name.to_string(), index);
                Ok(())
            }
        }
    }
}

impl ModelEntry {
    /// The module name the entry generates, when it is known without reading the model: its
    /// `name`, or for a kmodel (`.kmodel`), its file name.
    pub fn known_module_name(&self) -> Option<String> {
        if let Some(n) = &self.name {
            return Some(n.clone());
        }
        let kmodel = self.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("kmodel"));
        let stem = self.path.file_stem().and_then(|s| s.to_str());
        stem.filter(|_| kmodel).map(crate::support::names::module_ident)
    }

    /// The parameter placement this entry asks for (`embedded` when it says none).
    pub fn placement(&self) -> Placement {
        self.params.unwrap_or_default()
    }

    /// The include folders, sources and libraries the entry supplies, resolved against
    /// `crate_dir`.
    pub fn libraries(&self, crate_dir: &Path) -> crate::build::libraries::UserLibraries {
        crate::build::libraries::UserLibraries {
            include_dirs: self.include_dirs.clone(),
            sources: self.c_sources.clone(),
            libraries: self.libraries.clone(),
            compiler_configured: false,
        }
        .resolved(crate_dir)
    }

    /// The model's budget, with where it was set (entry `index` of the table in `cargo_toml`).
    pub fn budget(&self, index: usize, cargo_toml: &Path) -> crate::build::budget::Budget {
        crate::build::budget::Budget {
            ram: self.ram.map(Size::bytes),
            flash: self.flash.map(Size::bytes),
            source: format!("{TABLE}.models[{index}] in {}", cargo_toml.display()),
        }
    }
}

/// `p` resolved against `dir`: canonical when it exists, else with `.` and `..` resolved.
fn canonical(dir: &Path, p: &Path) -> PathBuf {
    use std::path::Component;
    let full = if p.is_absolute() { p.to_path_buf() } else { dir.join(p) };
    if let Ok(c) = full.canonicalize() {
        return c;
    }
    let mut out = PathBuf::new();
    for c in full.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64 KiB"), Ok(65536));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size(" 1.5 MiB "), Ok(1_572_864));
        assert_eq!(parse_size("512 kB"), Ok(512_000));
        assert_eq!(parse_size("2 MB"), Ok(2_000_000));
        assert_eq!(parse_size("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_size("100 B"), Ok(100));
        assert_eq!(parse_size("0.5 KiB"), Ok(512));
        assert_eq!(parse_size(".25 KiB"), Ok(256));
        assert_eq!(parse_size("7 bytes"), Ok(7));
    }

    #[test]
    fn bad_sizes() {
        for (s, msg) in [
            ("64 KB", "ambiguous"),
            ("64K", "ambiguous"),
            ("0.1 KiB", "whole number"),
            ("1.5", "whole number"),
            ("", "not a size"),
            ("KiB", "not a size"),
            ("1.2.3 KiB", "not a number"),
            ("64 furlongs", "unknown unit"),
            ("99999999999999999999 GiB", "too large"),
            ("-5", "not a size"),
        ] {
            let e = parse_size(s).unwrap_err();
            assert!(e.contains(msg), "{s:?}: {e}");
        }
    }

    #[test]
    fn table() {
        let m = Manifest::from_toml_str(
            r#"
            [package]
            name = "x"
            [package.metadata.mlf]
            ram = "256 KiB"
            flash = 1048576
            board = { flash = "1 MiB", ram = "320 KiB" }
            [[package.metadata.mlf.models]]
            path = "models/digits.tar"
            name = "digits"
            ram = "1 KiB"
            [[package.metadata.mlf.models]]
            path = "models/two.tar"
            module = "other"
            params = "streamed"
            fp_contract = true
            include_dirs = ["vendor/include"]
            c_sources = ["vendor/src", "extra.c"]
            libraries = ["vendor/libnn.a"]
            "#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.ram, Some(Size(262_144)));
        assert_eq!(m.flash, Some(Size(1 << 20)));
        assert_eq!(m.board, Some(Board { flash: Some(Size(1 << 20)), ram: Some(Size(320 << 10)), ..Board::default() }));
        let board = m.board_budget(Path::new("Cargo.toml"));
        assert_eq!((board.ram, board.source.as_str()), (Some(320 << 10), "package.metadata.mlf.board in Cargo.toml"));
        assert_eq!(m.models.len(), 2);
        assert_eq!(m.models[0].ram, Some(Size(1024)));
        assert_eq!(m.models[0].flash, None);
        assert_eq!(m.models[1].module.as_deref(), Some("other"));
        assert_eq!(m.models[1].placement(), Placement::Streamed);
        assert_eq!(m.models[0].placement(), Placement::Embedded);
        assert_eq!((m.models[0].fp_contract, m.models[1].fp_contract), (None, Some(true)));
        let libs = m.models[1].libraries(Path::new("/crate"));
        assert_eq!(libs.include_dirs, vec![PathBuf::from("/crate/vendor/include")]);
        assert_eq!(libs.sources, vec![PathBuf::from("/crate/vendor/src"), PathBuf::from("/crate/extra.c")]);
        assert_eq!(libs.libraries, vec![PathBuf::from("/crate/vendor/libnn.a")]);
        assert!(m.models[0].libraries(Path::new("/crate")).is_empty());
        assert_eq!(Manifest::from_toml_str("[package]\nname = \"x\"\n").unwrap(), None);
    }

    #[test]
    fn table_errors_name_the_field() {
        let err = |t: &str| Manifest::from_toml_str(&format!("[package]\nname = \"x\"\n{t}")).unwrap_err().to_string();
        let e = err("[package.metadata.mlf]\n[[package.metadata.mlf.models]]\npath = \"a.tar\"\nram = \"64 KB\"\n");
        assert!(e.starts_with("package.metadata.mlf.models[0].ram: "), "{e}");
        assert!(e.contains("ambiguous"), "{e}");
        let e = err("[package.metadata.mlf]\nrma = 5\n");
        assert!(e.contains("unknown field `rma`"), "{e}");
        let e = err("[[package.metadata.mlf.models]]\nname = \"x\"\n");
        assert!(e.contains("models[0]") && e.contains("missing field `path`"), "{e}");
        let e = err("[[package.metadata.mlf.models]]\npath = \"a.tar\"\nparams = \"external\"\n");
        assert!(e.starts_with("package.metadata.mlf.models[0].params: ") && e.contains("\"resident\""), "{e}");
        let e = err("[[package.metadata.mlf.models]]\npath = \"a.tar\"\nparams = \"sd-card\"\n");
        assert!(e.contains("unknown parameter placement"), "{e}");
        let e = err("[[package.metadata.mlf.models]]\npath = \"a.tar\"\nname = \"My Model\"\n");
        assert!(e.contains("models[0].name") && e.contains("my_model"), "{e}");
        let e = err("[[package.metadata.mlf.models]]\npath = \"a.tar\"\narena_section = \".d tcm\"\n");
        assert!(e.starts_with("package.metadata.mlf.models[0].arena_section: ") && e.contains("not allowed"), "{e}");
        let e = err("[package.metadata.mlf]\nboard = { flash = \"1 MiB\", rom = 5 }\n");
        assert!(e.starts_with("package.metadata.mlf.board") && e.contains("unknown field `rom`"), "{e}");
        let e = err("[package.metadata.mlf]\nram = -3\n");
        assert!(e.starts_with("package.metadata.mlf.ram: ") && e.contains("negative"), "{e}");
        let e = Manifest::from_toml_str("[package\n").unwrap_err().to_string();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn entries_listing_one_model_twice_or_one_module_twice_are_refused() {
        let check = |t: &str| {
            let m = Manifest::from_toml_str(&format!("[package]\nname = \"x\"\n{t}")).unwrap().unwrap();
            m.check_entries(Path::new("/crate")).map_err(|e| e.to_string())
        };
        let entry = |path: &str, more: &str| format!("[[package.metadata.mlf.models]]\npath = \"{path}\"\n{more}");
        // The same file, spelled differently: refused, naming both entries.
        let e = check(&(entry("models/a.tar", "") + &entry("./models/x/../a.tar", "name = \"b\"\n"))).unwrap_err();
        assert!(
            e.starts_with("package.metadata.mlf.models[1]: lists the same model as package.metadata.mlf.models[0]")
                && e.contains("counted twice")
                && e.contains("remove one"),
            "{e}"
        );
        let e = check(&(entry("/crate/m.tar", "module = \"m\"\n") + &entry("m.tar", "module = \"m\"\n"))).unwrap_err();
        assert!(e.contains("models[1]: lists the same model as") && e.contains("MLF module \"m\""), "{e}");
        // Other MLF modules of one archive are other models.
        assert!(check(&(entry("m.tar", "module = \"a\"\n") + &entry("m.tar", "module = \"b\"\n"))).is_ok());
        // Two entries naming one module, or two kmodels of one file name.
        let e = check(&(entry("a.tar", "name = \"net\"\n") + &entry("b.tar", "name = \"net\"\n"))).unwrap_err();
        assert!(
            e.starts_with(
                "package.metadata.mlf.models[1]: b.tar generates the module `net`, as package.metadata.mlf.models[0] (a.tar) does"
            )
                && e.contains("its `name` key"),
            "{e}"
        );
        let e = check(&(entry("a/net.kmodel", "") + &entry("b/net.kmodel", ""))).unwrap_err();
        assert!(e.contains("models[1]: b/net.kmodel generates the module `net`"), "{e}");
        let e = check(&(entry("a/iris.kmodel", "") + &entry("b.tar", "name = \"iris\"\n"))).unwrap_err();
        assert!(e.contains("models[1]: b.tar generates the module `iris`"), "{e}");
        assert!(check(&(entry("a/net.kmodel", "") + &entry("b/net.kmodel", "name = \"net2\"\n"))).is_ok());
        // The same entry may claim its own name again; another may not.
        let m =
            Manifest::from_toml_str(&format!("[package]\nname = \"x\"\n{}{}", entry("a.tar", ""), entry("b.tar", "")))
                .unwrap()
                .unwrap();
        let mut names = ModuleNames::default();
        names.claim(&m, 0, "model").unwrap();
        names.claim(&m, 0, "model").unwrap();
        let e = names.claim(&m, 1, "model").unwrap_err().to_string();
        assert!(
            e.contains("models[1]: b.tar generates the module `model`, as package.metadata.mlf.models[0] (a.tar) does"),
            "{e}"
        );
    }
}
