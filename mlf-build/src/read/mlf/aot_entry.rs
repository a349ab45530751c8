//! The AOT entry mlf calls, held to the interface header: `tvmgen_<m>_run` as the C defines it
//! must be the header's prototype (`int32_t tvmgen_<m>_run(struct tvmgen_<m>_inputs*, struct
//! tvmgen_<m>_outputs*` and the pools and devices structs the header declares), and the structs
//! it reads must be the header's: the file that defines it includes the header, no source
//! defines those structs itself, and none renames the header's names with `#define`/`#undef`.
//! mlf lays the structs out from the header, so a C definition with another parameter or other
//! members would read past what mlf passes.

use crate::error::{Error, Result};
use crate::model::{CFunction, ModelDesc};
use crate::read::header::InterfaceHeader;

/// Checks the struct-style entry `run` (defined in `member`) of model `cm` against `header`.
pub(super) fn check(
    desc: &ModelDesc,
    (member, run): (&str, &CFunction),
    header: Option<&InterfaceHeader>,
    header_name: &str,
    cm: &str,
) -> Result<()> {
    let refuse = |why: String| Err(Error::unsupported(why).in_member(member.to_string()));
    let Some(header) = header else {
        return refuse(format!(
            "{} takes structs but the archive has no interface header ({header_name}) to lay them out from",
            run.name
        ));
    };
    let mut want = vec![format!("struct tvmgen_{cm}_inputs*"), format!("struct tvmgen_{cm}_outputs*")];
    if !header.workspace_pools.is_empty() {
        want.push(format!("struct tvmgen_{cm}_workspace_pools*"));
    }
    if !header.devices.is_empty() {
        want.push(format!("struct tvmgen_{cm}_devices*"));
    }
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let got: Vec<String> = run.params.iter().map(|p| squash(&p.ty)).collect();
    if got != want.iter().map(|w| squash(w)).collect::<Vec<_>>() || squash(&run.ret) != "int32_t" {
        return refuse(format!(
            "{} is defined as {} {}({}) but {header_name} declares int32_t {}({}); mlf calls it as the \
             header declares it",
            run.name,
            run.ret,
            run.name,
            run.params.iter().map(|p| p.ty.as_str()).collect::<Vec<_>>().join(", "),
            run.name,
            want.join(", ")
        ));
    }
    let header_file = header_name.rsplit('/').next().unwrap_or(header_name);
    let source = desc.code.sources.iter().find(|s| s.member == member);
    if !source.is_some_and(|s| s.scan.includes.iter().any(|i| i.path == header_file)) {
        return refuse(format!(
            "defines {} without including {header_file}, so its structs are not the header's",
            run.name
        ));
    }
    let tags = ["inputs", "outputs", "workspace_pools", "devices"].map(|t| format!("tvmgen_{cm}_{t}"));
    for s in &desc.code.sources {
        let text = String::from_utf8_lossy(s.bytes.as_ref());
        if let Some(tag) = tags.iter().find(|t| defines_struct(&text, t)) {
            return Err(Error::unsupported(format!(
                "defines struct {tag}, which {header_name} declares; a model's C uses the header's"
            ))
            .in_member(s.member.clone()));
        }
        if let Some(line) = renames(&text) {
            return Err(Error::unsupported(format!(
                "#define or #undef of a tvmgen_ name (line {line}): it would change what the header declares"
            ))
            .in_member(s.member.clone()));
        }
    }
    Ok(())
}

/// Whether `text` holds `struct TAG {` (spaces, comments and line breaks between the words aside).
fn defines_struct(text: &str, tag: &str) -> bool {
    let mut from = 0;
    while let Some(p) = text[from..].find(tag) {
        let at = from + p;
        from = at + tag.len();
        let before = text[..at].trim_end();
        let after = text[from..].trim_start();
        let word_ends = !text[from..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if word_ends && before.ends_with("struct") && after.starts_with('{') {
            return true;
        }
    }
    false
}

/// The line of a `#define` or `#undef` whose name starts with `tvmgen_` (any case), if any.
fn renames(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let Some(d) = l.trim_start().strip_prefix('#') else { return false };
            let d = d.trim_start();
            let Some(rest) = d.strip_prefix("define").or_else(|| d.strip_prefix("undef")) else { return false };
            rest.trim_start().to_ascii_lowercase().starts_with("tvmgen_")
        })
        .map(|k| k + 1)
}
