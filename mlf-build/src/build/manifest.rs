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
//! params = "embedded"          # parameter placement: "embedded" (default), "resident", "streamed"
//! fp_contract = false          # true: let the C compiler fuse a*b+c (default: -ffp-contract=off)
//! max_static = "256 MiB"       # most static memory the generated module may allocate (the default)
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
    /// (external, loaded once into a static region) or `"streamed"` (external, loaded operator
    /// by operator into a staging buffer).
    pub params: Option<Placement>,
    /// `true` lets the C compiler contract `a*b+c` into fused multiply-adds; by default the
    /// model's C is compiled with `-ffp-contract=off` (see [`crate::Model::fp_contract`]).
    pub fp_contract: Option<bool>,
    /// Where a kmodel's KPU layers run, as its `include_model!(…, kpu = …)` says: `"device-model"`
    /// (the default) or `"k210"`; the report and budgets count that backend's memory.
    pub kpu: Option<crate::model::Kpu>,
    /// The most static memory the generated module may allocate (default 256 MiB): see
    /// [`crate::Model::max_static_bytes`].
    pub max_static: Option<Size>,
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// Flash (the program image).
    pub flash: Option<Size>,
    /// RAM (static RAM and the stack).
    pub ram: Option<Size>,
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
    /// `cargo metadata` reports it): `None` when it has no `mlf` key.
    ///
    /// Errors name the field (`package.metadata.mlf.models[0].ram`).
    pub fn from_package_metadata(metadata: &serde_json::Value) -> Result<Option<Manifest>> {
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

    /// Reads the table from a `Cargo.toml` file: `None` when the file has none.
    pub fn read(cargo_toml: &Path) -> Result<Option<Manifest>> {
        let text = std::fs::read_to_string(cargo_toml).map_err(|e| Error::from(e).in_file(cargo_toml))?;
        Manifest::from_toml_str(&text).map_err(|e| e.in_file(cargo_toml))
    }

    /// Reads the table from the text of a `Cargo.toml`.
    pub fn from_toml_str(text: &str) -> Result<Option<Manifest>> {
        let doc: serde_json::Value =
            toml::from_str(text).map_err(|e| Error::invalid(format!("not valid TOML: {}", e.message())))?;
        match doc.get("package").and_then(|p| p.get("metadata")) {
            Some(meta) => Manifest::from_package_metadata(meta),
            None => Ok(None),
        }
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
        let board = self.board.unwrap_or_default();
        crate::build::budget::Budget {
            ram: board.ram.map(Size::bytes),
            flash: board.flash.map(Size::bytes),
            source: format!("{TABLE}.board in {}", cargo_toml.display()),
        }
    }
}

impl ModelEntry {
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

fn canonical(dir: &Path, p: &Path) -> PathBuf {
    let full = if p.is_absolute() { p.to_path_buf() } else { dir.join(p) };
    full.canonicalize().unwrap_or(full)
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
        assert_eq!(m.board, Some(Board { flash: Some(Size(1 << 20)), ram: Some(Size(320 << 10)) }));
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
        let e = err("[package.metadata.mlf]\nboard = { flash = \"1 MiB\", rom = 5 }\n");
        assert!(e.starts_with("package.metadata.mlf.board") && e.contains("unknown field `rom`"), "{e}");
        let e = err("[package.metadata.mlf]\nram = -3\n");
        assert!(e.starts_with("package.metadata.mlf.ram: ") && e.contains("negative"), "{e}");
        let e = Manifest::from_toml_str("[package\n").unwrap_err().to_string();
        assert!(e.contains("not valid TOML"), "{e}");
    }
}
