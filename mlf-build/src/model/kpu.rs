//! Where a kmodel's KPU layers run: the one spelling of it that `include_model!` (`kpu =
//! k210`), `[package.metadata.mlf]` (`kpu = "k210"`) and `cargo mlf` parse.

use std::fmt;
use std::str::FromStr;

/// Where a kmodel's KPU layers run (its CPU layers always run on the CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kpu {
    /// mlf's register-level device model of the KPU, on any CPU (host, QEMU): the module
    /// allocates the emulated KPU RAM and the convolution scratch.
    #[default]
    DeviceModel,
    /// The K210's own KPU through its registers and its 2 MiB of KPU RAM (mlf-runtime's feature
    /// `k210`): the module allocates main memory and the CPU layers' scratch only.
    K210,
}

impl Kpu {
    /// Both backends.
    pub const ALL: [Kpu; 2] = [Kpu::DeviceModel, Kpu::K210];

    /// `device-model` or `k210` (the manifest's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Kpu::DeviceModel => "device-model",
            Kpu::K210 => "k210",
        }
    }
}

impl fmt::Display for Kpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A KPU backend that is not one of the two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKpu(String);

impl fmt::Display for UnknownKpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown KPU backend {:?} (expected \"k210\" or \"device-model\")", self.0)
    }
}

impl std::error::Error for UnknownKpu {}

impl FromStr for Kpu {
    type Err = UnknownKpu;

    /// `k210`, or `device-model` (also `device_model`, as an identifier in `include_model!`).
    fn from_str(s: &str) -> Result<Kpu, UnknownKpu> {
        match s {
            "k210" => Ok(Kpu::K210),
            "device-model" | "device_model" => Ok(Kpu::DeviceModel),
            _ => Err(UnknownKpu(s.to_string())),
        }
    }
}

impl serde::Serialize for Kpu {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Kpu {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kpu, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings() {
        for k in Kpu::ALL {
            assert_eq!(k.name().parse::<Kpu>(), Ok(k));
        }
        assert_eq!("device_model".parse::<Kpu>(), Ok(Kpu::DeviceModel));
        let e = "kpu".parse::<Kpu>().unwrap_err().to_string();
        assert_eq!(e, "unknown KPU backend \"kpu\" (expected \"k210\" or \"device-model\")");
    }
}
