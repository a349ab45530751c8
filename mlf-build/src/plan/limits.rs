//! Bounds on what a model may make the build generate: a static the size of what a hostile
//! header claims (a kmodel's 4 GiB of main memory, a graph output of 2^40 elements) would have
//! rustc evaluate its initialiser byte by byte, using several times that in memory. Sizes are
//! checked against the limit before any code is generated.

use crate::error::{Error, Result};
use crate::support::size::human;

/// Default limit of the static memory one generated module may allocate (arena, parameter RAM,
/// a kmodel's main memory, KPU RAM and scratch): 256 MiB, beyond every microcontroller and every
/// model in the fixtures (the largest needs 3.5 MB), and what rustc handles in about 1.5 GB.
pub const DEFAULT_MAX_STATIC_BYTES: u64 = 256 << 20;

/// Refuses `bytes` of static memory over `limit`, saying what they are and how to raise it.
pub fn check_static(bytes: u64, parts: &str, limit: u64) -> Result<()> {
    if bytes <= limit {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "the model needs {bytes} bytes ({}) of static memory ({parts}), more than the limit of {limit} bytes ({}); \
         a model this large is refused before code is generated (raise the limit with \
         `Model::max_static_bytes`, `max_static` in [package.metadata.mlf].models, or \
         `max_static = \"…\"` in include_model! for a kmodel)",
        human(bytes),
        human(limit)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_over_the_limit_with_both_numbers() {
        check_static(100, "arena 100", 100).unwrap();
        let e = check_static(1 << 40, "arena 1099511627776", DEFAULT_MAX_STATIC_BYTES).unwrap_err().to_string();
        assert!(e.contains("1099511627776 bytes") && e.contains("268435456 bytes"), "{e}");
    }
}
