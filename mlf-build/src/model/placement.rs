//! Where a model's parameters live at run time: the one spelling of it that `build.rs`
//! (`Model::params`), `[package.metadata.mlf]` (`params = "…"`), `include_model!`
//! (`params = "…"`) and `cargo mlf` (`--params`, `--placement`) all parse: `embedded`,
//! `resident`, `streamed` or `lazy`.

use std::fmt;
use std::str::FromStr;

/// Where a model's parameters live at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Placement {
    /// In the program image (flash), aligned, used in place: no byte is copied to RAM.
    #[default]
    Embedded,
    /// Outside the program image, every parameter in its own file read through a
    /// `mlf_runtime::params::ParamSource`: all loaded once (`Model::load`) into a static region
    /// sized at build time.
    Resident,
    /// Outside the program image like [`Placement::Resident`], but each operator's parameters
    /// are read just before it runs into a staging buffer sized at build time to the largest
    /// operator's need.
    Streamed,
    /// Outside the program image, in the static region of [`Placement::Resident`] (the same
    /// layout and RAM), but nothing is read before the first run: `run` reads each parameter
    /// into its place the first time an operator that uses it runs, and the model remembers
    /// what it loaded, so later runs read nothing (operators that never run never load theirs).
    Lazy,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 4] = [Placement::Embedded, Placement::Resident, Placement::Streamed, Placement::Lazy];

    /// `embedded`, `resident`, `streamed` or `lazy`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Embedded => "embedded",
            Placement::Resident => "resident",
            Placement::Streamed => "streamed",
            Placement::Lazy => "lazy",
        }
    }

    /// Whether the parameters live outside the program image.
    pub fn is_external(self) -> bool {
        self != Placement::Embedded
    }

    /// Whether `run` reads parameters through a `ParamSource` it takes (streamed and lazy).
    pub fn reads_in_run(self) -> bool {
        matches!(self, Placement::Streamed | Placement::Lazy)
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A placement that is not one of the four, with what to write instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPlacement(String);

impl fmt::Display for UnknownPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == "external" {
            f.write_str(
                "say which external placement: \"resident\" (loaded once), \"streamed\" (operator by operator) or \"lazy\" (as operators first need them)",
            )
        } else {
            write!(
                f,
                "unknown parameter placement {:?} (expected \"embedded\", \"resident\", \"streamed\" or \"lazy\")",
                self.0
            )
        }
    }
}

impl std::error::Error for UnknownPlacement {}

impl FromStr for Placement {
    type Err = UnknownPlacement;

    fn from_str(s: &str) -> Result<Placement, UnknownPlacement> {
        Placement::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| UnknownPlacement(s.to_string()))
    }
}

impl serde::Serialize for Placement {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Placement {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Placement, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name_and_says_what_to_write_instead() {
        for p in Placement::ALL {
            assert_eq!(p.name().parse::<Placement>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
        let e = "external".parse::<Placement>().unwrap_err().to_string();
        assert!(e.contains("\"resident\" (loaded once)"), "{e}");
        let e = "sd-card".parse::<Placement>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown parameter placement \"sd-card\" (expected \"embedded\", \"resident\", \"streamed\" or \"lazy\")"
        );
        assert_eq!("lazy".parse::<Placement>(), Ok(Placement::Lazy));
    }
}
