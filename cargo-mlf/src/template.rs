//! Renders the crate templates in `templates/` (embedded in the binary): `{{name}}`
//! placeholders are replaced, files are written only when they change.

use std::path::Path;

use mlf_build::__private::write_if_changed;
use mlf_build::Error;
use mlf_build::TensorInfo;

/// A template: (relative path, contents).
pub type Template = [(&'static str, &'static str)];

/// `templates/run`: the manifest of the crate `cargo mlf run` builds (its `build.rs` and
/// `main.rs` are generated code).
pub const RUN: [(&str, &str); 1] = [("Cargo.toml", include_str!("../templates/run/Cargo.toml.in"))];

/// `templates/run-device`: the manifest and the support module of the program `cargo mlf run
/// --target` builds for an emulated device (its `build.rs` and `main.rs` are generated code).
pub const RUN_DEVICE: [(&str, &str); 2] = [
    ("Cargo.toml", include_str!("../templates/run-device/Cargo.toml.in")),
    ("src/device.rs", include_str!("../templates/run-device/src/device.rs")),
];

/// `templates/host`: a host program that runs a model and prints its outputs (`cargo mlf new`).
pub const HOST: [(&str, &str); 4] = [
    ("Cargo.toml", include_str!("../templates/host/Cargo.toml.in")),
    ("build.rs", include_str!("../templates/host/build.rs")),
    ("src/main.rs", include_str!("../templates/host/src/main.rs")),
    ("README.md", include_str!("../templates/host/README.md")),
];

/// `templates/firmware`: Cortex-M4F firmware run by `cargo run` in QEMU (`cargo mlf new
/// --template firmware`).
pub const FIRMWARE: [(&str, &str); 6] = [
    ("Cargo.toml", include_str!("../templates/firmware/Cargo.toml.in")),
    (".cargo/config.toml", include_str!("../templates/firmware/.cargo/config.toml")),
    ("memory.x", include_str!("../templates/firmware/memory.x")),
    ("build.rs", include_str!("../templates/firmware/build.rs")),
    ("src/main.rs", include_str!("../templates/firmware/src/main.rs")),
    ("README.md", include_str!("../templates/firmware/README.md")),
];

/// `templates/k210`: a kmodel on a Kendryte K210 (RV64GC), run by `cargo run` in QEMU (`cargo
/// mlf new --template k210`).
pub const K210: [(&str, &str); 6] = [
    ("Cargo.toml", include_str!("../templates/k210/Cargo.toml.in")),
    (".cargo/config.toml", include_str!("../templates/k210/.cargo/config.toml")),
    ("memory.x", include_str!("../templates/k210/memory.x")),
    ("build.rs", include_str!("../templates/k210/build.rs")),
    ("src/main.rs", include_str!("../templates/k210/src/main.rs")),
    ("README.md", include_str!("../templates/k210/README.md")),
];

/// Replaces every `{{key}}`; a placeholder left over is an error (a bug in mlf).
pub fn render(text: &str, vars: &[(&str, String)]) -> Result<String, Error> {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    if let Some(p) = out.find("{{") {
        let end = out[p..].find("}}").map(|q| p + q + 2).unwrap_or(out.len());
        return Err(Error::invalid(format!("template placeholder {} was not filled", &out[p..end])));
    }
    Ok(out)
}

/// Renders every file of `template` into `dir`.
pub fn render_dir(template: &Template, dir: &Path, vars: &[(&str, String)]) -> Result<(), Error> {
    for (rel, text) in template {
        write_if_changed(&dir.join(rel), render(text, vars)?.as_bytes())?;
    }
    Ok(())
}

/// The `[dependencies]` line of mlf-runtime (with `macros`, and `std` when `std` is true;
/// without default features otherwise) and the `[build-dependencies]` line of mlf-build for a
/// generated crate: the published versions of this cargo-mlf's release, or the crates of the
/// mlf checkout `checkout` by path.
pub fn deps(std: bool, checkout: Option<&Path>) -> (String, String) {
    let version = env!("CARGO_PKG_VERSION");
    let (no_default, features) =
        if std { ("", r#""macros", "std""#) } else { ("default-features = false, ", r#""macros""#) };
    match checkout {
        Some(r) => (
            format!(
                "{{ path = {:?}, {no_default}features = [{features}] }}",
                r.join("mlf-runtime").display().to_string()
            ),
            format!("{{ path = {:?} }}", r.join("mlf-build").display().to_string()),
        ),
        None => {
            (format!("{{ version = \"{version}\", {no_default}features = [{features}] }}"), format!("\"{version}\""))
        }
    }
}

/// The Rust element type of a tensor (an error for dtypes Rust has no type for).
pub fn elem_type(t: &TensorInfo) -> Result<&'static str, Error> {
    t.dtype.require_rust_type()
}

/// Generated code reading input `t` from `source` with `func::<T, N, S>(source, T::from_le_bytes)`,
/// where `func` is a template's reader of raw little-endian tensors.
pub fn read_call(t: &TensorInfo, func: &str, source: &str) -> Result<String, Error> {
    let ty = elem_type(t)?;
    Ok(format!("{func}::<{ty}, {n}, {s}>({source}, {ty}::from_le_bytes)", n = t.numel(), s = t.dtype.elem_bytes()))
}
