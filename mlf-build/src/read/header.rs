//! The AOT interface header (`codegen/host/include/tvmgen_<m>.h`, interface-api `c`).
//!
//! It is the authority on argument order and C member names: `struct tvmgen_<m>_inputs` /
//! `_outputs` members in order, optional `_workspace_pools` / `_devices`, the size macros.

use crate::error::{Error, Result};

/// What the header declares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterfaceHeader {
    /// Members of `struct tvmgen_<m>_inputs`, in order (sanitised C names).
    pub inputs: Vec<String>,
    /// Members of `struct tvmgen_<m>_outputs`, in order.
    pub outputs: Vec<String>,
    /// Members of `struct tvmgen_<m>_workspace_pools` (external USMP pools), if declared.
    pub workspace_pools: Vec<String>,
    /// Members of `struct tvmgen_<m>_devices`, if declared.
    pub devices: Vec<String>,
    /// `#define TVMGEN_<M>_WORKSPACE_SIZE`.
    pub workspace_size: Option<u64>,
    /// Every `#define <NAME> <integer>` in the header, in order.
    pub defines: Vec<(String, u64)>,
    /// True when `tvmgen_<m>_map_inputs` is declared (USMP `use_workspace_io`).
    pub maps_io: bool,
}

impl InterfaceHeader {
    /// Parses the header of model `model_name`.
    pub fn parse(text: &str, model_name: &str) -> Result<InterfaceHeader> {
        let m = model_name.to_ascii_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let text = strip_c_comments(text);
        let mut h = InterfaceHeader::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("#define") {
                let mut it = rest.split_whitespace();
                if let (Some(name), Some(value)) = (it.next(), it.next()) {
                    if let Ok(v) = value.trim_end_matches(['u', 'U', 'l', 'L']).parse::<u64>() {
                        h.defines.push((name.to_string(), v));
                    }
                }
            }
        }
        let upper = m.to_ascii_uppercase();
        h.workspace_size =
            h.defines.iter().find(|(n, _)| *n == format!("TVMGEN_{upper}_WORKSPACE_SIZE")).map(|(_, v)| *v);
        h.inputs = struct_members(&text, &format!("tvmgen_{m}_inputs"))?.unwrap_or_default();
        h.outputs = struct_members(&text, &format!("tvmgen_{m}_outputs"))?.unwrap_or_default();
        h.workspace_pools = struct_members(&text, &format!("tvmgen_{m}_workspace_pools"))?.unwrap_or_default();
        h.devices = struct_members(&text, &format!("tvmgen_{m}_devices"))?.unwrap_or_default();
        h.maps_io = text.contains(&format!("tvmgen_{m}_map_inputs"));
        if h.inputs.is_empty() && h.outputs.is_empty() {
            return Err(Error::invalid(format!(
                "declares neither struct tvmgen_{m}_inputs nor struct tvmgen_{m}_outputs"
            )));
        }
        Ok(h)
    }
}

/// Members (`void* name;`) of `struct <tag> { … };`, or `None` when the struct is not defined.
fn struct_members(text: &str, tag: &str) -> Result<Option<Vec<String>>> {
    let mut search = 0;
    while let Some(p) = text[search..].find(tag) {
        let at = search + p;
        search = at + tag.len();
        let before = text[..at].trim_end();
        let after = text[at + tag.len()..].trim_start();
        if !before.ends_with("struct") || !after.starts_with('{') {
            continue;
        }
        let body_start = text.len() - after.len() + 1;
        let body_end = text[body_start..]
            .find('}')
            .map(|q| body_start + q)
            .ok_or_else(|| Error::invalid(format!("struct {tag} is not closed")))?;
        let mut members = Vec::new();
        for decl in text[body_start..body_end].split(';') {
            let decl = decl.trim();
            if decl.is_empty() {
                continue;
            }
            let name: String = decl
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if name.is_empty() {
                return Err(Error::invalid(format!("struct {tag}: cannot read member {decl:?}")));
            }
            members.push(name);
        }
        return Ok(Some(members));
    }
    Ok(None)
}

/// Removes C comments (`/* */` and `//`), keeping line structure.
pub fn strip_c_comments(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out.push_str(&s[last..i]);
                let end = s[i + 2..].find("*/").map(|q| i + 2 + q + 2).unwrap_or(b.len());
                out.extend(s[i..end].chars().filter(|&c| c == '\n'));
                i = end;
                last = i;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.push_str(&s[last..i]);
                let end = s[i..].find('\n').map(|q| i + q).unwrap_or(b.len());
                i = end;
                last = i;
            }
            _ => i += 1,
        }
    }
    if last < b.len() {
        out.push_str(&s[last.min(b.len())..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_structs_and_sizes() {
        let h = r#"
#define TVMGEN_DEFAULT_SERVING_DEFAULT_INPUT_1_0_SIZE 5
#define TVMGEN_DEFAULT_STATEFULPARTITIONEDCALL_0_SIZE 1
/* comment */
struct tvmgen_default_inputs  { void* serving_default_input_1_0; };
struct tvmgen_default_outputs { void* StatefulPartitionedCall_0; void* b; };
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs, struct tvmgen_default_outputs* outputs);
#define TVMGEN_DEFAULT_WORKSPACE_SIZE 3088
"#;
        let p = InterfaceHeader::parse(h, "default").unwrap();
        assert_eq!(p.inputs, vec!["serving_default_input_1_0"]);
        assert_eq!(p.outputs, vec!["StatefulPartitionedCall_0", "b"]);
        assert_eq!(p.workspace_size, Some(3088));
        let size = p.defines.iter().find(|(n, _)| n == "TVMGEN_DEFAULT_SERVING_DEFAULT_INPUT_1_0_SIZE");
        assert_eq!(size.map(|(_, v)| *v), Some(5));
    }
}
