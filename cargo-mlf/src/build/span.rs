//! Where a problem of `cargo mlf build` stands in the package's `Cargo.toml`, for editors: the
//! JSON line of an error (`--message-format json`) carries the file, member and field the error
//! names and a span in the shape of rustc's JSON diagnostics (`file_name`, `line_start`,
//! `column_start`, … 1-based, columns in characters).

use std::path::Path;

use mlf_build::Error;
use serde_json::{Value, json};

/// The first place `needle` appears in `text` (of the file `file_name`), as a primary span;
/// `None` when it does not appear.
pub fn span_in(text: &str, file_name: &Path, needle: &str) -> Option<Value> {
    if needle.is_empty() {
        return None;
    }
    let (index, line) = text.lines().enumerate().find(|(_, l)| l.contains(needle))?;
    let start = line[..line.find(needle)?].chars().count() + 1;
    let end = start + needle.chars().count();
    Some(json!({
        "file_name": file_name.display().to_string(),
        "byte_start": text.lines().take(index).map(|l| l.len() + 1).sum::<usize>() + line.find(needle)?,
        "line_start": index + 1,
        "line_end": index + 1,
        "column_start": start,
        "column_end": end,
        "is_primary": true,
        "text": [{"text": line, "highlight_start": start, "highlight_end": end}],
        "label": null,
    }))
}

/// The 1-based line and column where `needle` first appears in `text`.
pub fn position_of(text: &str, needle: &str) -> Option<(usize, usize)> {
    let span = span_in(text, Path::new(""), needle)?;
    Some((span["line_start"].as_u64()? as usize, span["column_start"].as_u64()? as usize))
}

/// The `mlf-error` JSON line of `e`, a problem of package `package` (manifest `manifest`) with
/// model `model`: the message, the file, member and field the error names, and the span of
/// `needle` (what the entry says, e.g. its `path`) in the manifest when it is found there.
pub fn error_line(package: &str, manifest: &Path, model: &str, needle: &str, e: &Error) -> Value {
    // The package's own manifest, which cargo has just read: small, and a regular file.
    let spans: Vec<Value> =
        std::fs::read_to_string(manifest).ok().and_then(|text| span_in(&text, manifest, needle)).into_iter().collect();
    json!({
        "reason": "mlf-error",
        "package": package,
        "manifest_path": manifest.display().to_string(),
        "model": model,
        "message": e.to_string(),
        "file": e.file.as_ref().map(|f| f.display().to_string()),
        "member": e.member,
        "field": e.field,
        "spans": spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_of_an_entry_is_where_it_stands() {
        let text = "[package]\nname = \"x\"\n\n[package.metadata.mlf]\nmodels = [{ path = \"models/kws.tar\", ram = \"64K\" }]\n";
        let s = span_in(text, Path::new("/p/Cargo.toml"), "models/kws.tar").unwrap();
        assert_eq!(
            (s["line_start"].as_u64(), s["column_start"].as_u64(), s["column_end"].as_u64()),
            (Some(5), Some(21), Some(35))
        );
        assert_eq!(&text[s["byte_start"].as_u64().unwrap() as usize..][..14], "models/kws.tar");
        assert_eq!(s["file_name"], "/p/Cargo.toml");
        assert!(span_in(text, Path::new("Cargo.toml"), "other.tar").is_none());
        assert!(span_in(text, Path::new("Cargo.toml"), "").is_none());
    }
}
