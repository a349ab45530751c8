//! External parameters: every parameter in its own file named by a short identifier derived
//! from its content (identical tensors share one file), a `configure.json` mapping identifier →
//! file, and the rules for which models can be split.

use std::path::Path;

use serde_json::json;

use crate::build::compile::write_if_changed;
use crate::bytes::Bytes;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::model::{ConstantKind, Executor, ModelDesc};

/// How external parameters are held at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// All loaded once (`Model::load`) into a static region sized at build time.
    #[default]
    Resident,
    /// Each operator's parameters read just before it runs into a staging buffer sized at build
    /// time to the largest operator's need.
    Streamed,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 2] = [Placement::Resident, Placement::Streamed];

    /// `resident` or `streamed`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Resident => "resident",
            Placement::Streamed => "streamed",
        }
    }

    /// From `resident` / `streamed`.
    pub fn parse(s: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// One parameter file.
#[derive(Clone, Debug)]
pub struct ParamFile {
    /// Identifier: `p` + the xxh64 of the bytes in 16 hex digits.
    pub id: String,
    /// xxh64 (seed 0) of the bytes.
    pub xxh64: u64,
    /// Element type (of the first tensor with these bytes).
    pub dtype: DType,
    /// Shape (of the first tensor with these bytes).
    pub shape: Vec<u64>,
    /// Names of the tensors with these bytes.
    pub names: Vec<String>,
    /// The bytes.
    pub data: Bytes,
}

impl ParamFile {
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// The file's path inside a split folder or packed archive.
    pub fn member(&self) -> String {
        format!("params/{}.bin", self.id)
    }
}

/// The parameter files of a model and, for each of its parameters, the file holding it.
#[derive(Clone, Debug, Default)]
pub struct Split {
    /// Distinct files.
    pub files: Vec<ParamFile>,
    /// For each entry of `ModelDesc::params`: index into `files`.
    pub of_param: Vec<usize>,
}

/// The xxh64 the runtime checks.
pub fn xxh64(data: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(data, 0)
}

/// The identifier of some bytes.
pub fn id_for(data: &[u8]) -> String {
    format!("p{:016x}", xxh64(data))
}

impl Split {
    /// Adds a tensor, sharing the file of identical bytes; returns the file index.
    pub fn add(&mut self, name: &str, dtype: DType, shape: &[u64], data: &Bytes) -> usize {
        let id = id_for(data);
        if let Some(k) = self.files.iter().position(|f| f.id == id && f.data == *data) {
            self.files[k].names.push(name.to_string());
            return k;
        }
        self.files.push(ParamFile {
            id,
            xxh64: xxh64(data),
            dtype,
            shape: shape.to_vec(),
            names: vec![name.to_string()],
            data: data.clone(),
        });
        self.files.len() - 1
    }
}

/// Why a model's parameters cannot be external, if they cannot.
pub fn refusal(desc: &ModelDesc) -> Option<String> {
    let arrays: Vec<_> = desc.code.constants.iter().filter(|c| c.kind == ConstantKind::StaticArray).collect();
    let array_bytes: u64 = arrays.iter().map(|c| c.bytes).sum();
    match &desc.executor {
        Executor::Graph(_) => {
            if desc.params.iter().any(|p| p.linked.is_some()) {
                return Some("its parameters are linked into the C (TVM 0.8 link-params, `_lookup_linked_param`); export with link-params=0 to keep them separable".into());
            }
            if !arrays.is_empty() {
                return Some(format!(
                    "its constants are compiled into the C as {} per-operator `static const` arrays ({array_bytes} bytes) that cannot be separated safely; export with link-params=0",
                    arrays.len()
                ));
            }
            None
        }
        Executor::Aot(a) => {
            if a.usmp.as_ref().is_some_and(|u| u.constant_bytes.is_some()) && arrays.is_empty() {
                None
            } else if !arrays.is_empty() {
                Some(format!(
                    "its constants are compiled into the C as {} per-operator `static const` arrays ({array_bytes} bytes) that cannot be separated safely; only AOT builds with a USMP constant pool (`global_const_workspace`) can have external parameters",
                    arrays.len()
                ))
            } else {
                Some("it has no USMP constant pool (`global_const_workspace`) to take out of the C".into())
            }
        }
        Executor::Kmodel(_) => Some("kmodel weights are part of the kmodel file, which is embedded".into()),
    }
}

/// The split of a graph model's `.params` (an error when [`refusal`] says no).
pub fn graph_split(desc: &ModelDesc) -> Result<Split> {
    if let Some(why) = refusal(desc) {
        return Err(Error::unsupported(format!("parameters cannot be external: {why}")));
    }
    let mut split = Split::default();
    for p in &desc.params {
        let k = split.add(&p.name, p.dtype, &p.shape, &p.data);
        split.of_param.push(k);
    }
    Ok(split)
}

/// `configure.json`: identifier → file, size, hash, dtype, shape, tensor names.
pub fn configure_json(desc: &ModelDesc, split: &Split) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> = split
        .files
        .iter()
        .map(|f| {
            (
                f.id.clone(),
                json!({
                    "file": f.member(),
                    "bytes": f.bytes(),
                    "xxh64": format!("{:016x}", f.xxh64),
                    "dtype": f.dtype.to_string(),
                    "shape": f.shape,
                    "names": f.names,
                }),
            )
        })
        .collect();
    json!({
        "format": "mlf-params",
        "version": 1,
        "model": desc.name,
        "source": desc.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        "params": params,
    })
}

/// Writes `dir/params/<id>.bin` for every file and `dir/configure.json`.
pub fn write_folder(dir: &Path, desc: &ModelDesc, split: &Split) -> Result<()> {
    for f in &split.files {
        write_if_changed(&dir.join(f.member()), &f.data)?;
    }
    let text = serde_json::to_string_pretty(&configure_json(desc, split)).expect("json");
    write_if_changed(&dir.join("configure.json"), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_tensors_share_a_file() {
        let a = Bytes::new(vec![1u8, 2, 3, 4]);
        let b = Bytes::new(vec![1u8, 2, 3, 4]);
        let c = Bytes::new(vec![9u8; 4]);
        let mut s = Split::default();
        assert_eq!(s.add("p0", DType::F32, &[1], &a), 0);
        assert_eq!(s.add("p1", DType::I32, &[1], &b), 0);
        assert_eq!(s.add("p2", DType::F32, &[1], &c), 1);
        assert_eq!(s.files[0].names, vec!["p0", "p1"]);
        assert_eq!(s.files[0].id.len(), 17);
        assert_eq!(s.files[0].id, id_for(&[1, 2, 3, 4]));
    }
}

/// Takes the USMP constant pool out of an AOT model's C: compiles the file that defines
/// `global_const_workspace` for the target and reads the pool's bytes from the object, then
/// returns a copy of the model whose C no longer defines the pools or `tvmgen_<m>_run`, and whose
/// main is called directly with the constant pool (from a `ParamSource`) and the workspace pool
/// (in the arena). The split holds the one pool file.
pub fn take_out_constant_pool(
    desc: &ModelDesc,
    job: &crate::build::compile::CompileJob<'_>,
) -> Result<(ModelDesc, Split)> {
    use crate::format::csource::CFile;
    use crate::model::{AotCall, CSource, MainPool};
    if let Some(why) = refusal(desc) {
        return Err(Error::unsupported(format!("parameters cannot be external: {why}")));
    }
    let Executor::Aot(a) = &desc.executor else { return Err(Error::invalid("not an AOT model")) };
    let m = crate::names::sanitize(&desc.name).to_ascii_lowercase();
    let run = format!("tvmgen_{m}_run");
    let (si, src) = desc
        .code
        .sources
        .iter()
        .enumerate()
        .find(|(_, s)| s.scan.globals.iter().any(|g| g.name == "global_const_workspace" && !g.is_extern))
        .ok_or_else(|| Error::missing("the definition of global_const_workspace"))?;
    let text = src.bytes.as_str().map_err(|e| e.in_member(src.member.clone()))?;
    let pool = crate::build::compile::extract_static_bytes(job, &src.member, text, "global_const_workspace")?;
    // The pools `run` passes to the main, in its order.
    let run_item = src
        .scan
        .items
        .iter()
        .find(|i| i.name == run && i.is_function_definition)
        .ok_or_else(|| Error::missing(format!("{run} in {}", src.member)))?;
    let run_text = &text[run_item.range.clone()];
    let mut order: Vec<(usize, bool)> = Vec::new();
    for (needle, constant) in [("&global_const_workspace", true), ("&global_workspace", false)] {
        let mut from = 0;
        while let Some(p) = run_text[from..].find(needle) {
            let at = from + p;
            let next = run_text[at + needle.len()..].chars().next().unwrap_or(' ');
            if !(next.is_ascii_alphanumeric() || next == '_') {
                order.push((at, constant));
            }
            from = at + needle.len();
        }
    }
    order.sort();
    let main_name = [format!("tvmgen_{m}___tvm_main__"), format!("tvmgen_{m}_run_model")]
        .into_iter()
        .find(|n| desc.code.definition(n).is_some())
        .ok_or_else(|| Error::missing("the AOT main function"))?;
    let (_, main) = desc.code.definition(&main_name).expect("found above");
    let workspace = a.usmp.as_ref().map_or(0, |u| u.workspace_bytes);
    let main_pools: Vec<MainPool> = order
        .iter()
        .enumerate()
        .map(|(k, &(_, constant))| MainPool {
            name: if constant { "global_const_workspace".into() } else { format!("global_workspace_{k}") },
            constant,
            bytes: if constant { pool.len() as u64 } else { workspace },
        })
        .collect();
    if main_pools.iter().filter(|p| p.constant).count() != 1 || main_pools.iter().filter(|p| !p.constant).count() > 1 {
        return Err(Error::unsupported(format!(
            "{run} passes {} pools; one constant pool and at most one workspace pool are supported",
            main_pools.len()
        )));
    }
    let n_io = desc.inputs.len() + desc.outputs.len();
    if !main.is_packed() && main.params.len() != n_io + main_pools.len() {
        return Err(Error::unsupported(format!(
            "{main_name} takes {} pointers, not {n_io} tensors and {} pools",
            main.params.len(),
            main_pools.len()
        )));
    }
    let new_text = src.scan.without_items(text, &["global_const_workspace", "global_workspace", &run]);
    let mut out = desc.clone();
    out.code.sources[si] =
        CSource { member: src.member.clone(), scan: CFile::scan(&new_text), bytes: Bytes::new(new_text.into_bytes()) };
    out.code.constants.retain(|c| c.kind != ConstantKind::Pool);
    if let Executor::Aot(x) = &mut out.executor {
        x.call = if main.is_packed() {
            AotCall::Packed { symbol: main_name.clone() }
        } else {
            AotCall::Unpacked { symbol: main_name.clone() }
        };
        x.style = format!("{main_name} called directly with its pools (constant pool external)");
        x.usmp = None;
        x.workspace_bytes = 0;
        x.main_pools = main_pools;
    }
    let mut split = Split::default();
    split.add("global_const_workspace", DType::U8, &[pool.len() as u64], &Bytes::new(pool));
    Ok((out, split))
}

/// One entry of a split folder's `configure.json`, as checked by [`check_folder`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigEntry {
    /// Identifier.
    pub id: String,
    /// File path relative to the folder.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// xxh64 as recorded.
    pub xxh64: String,
    /// dtype as recorded.
    pub dtype: String,
    /// Shape as recorded.
    pub shape: Vec<u64>,
    /// Tensor names.
    pub names: Vec<String>,
}

/// Reads `configure.json` of a split folder (or the same member of a packed archive) and checks
/// every entry against its file: present, the recorded size, the recorded hash, and named
/// `params/<id>.bin` (how `no_std` sources resolve identifiers). Errors name the identifier and
/// the path.
pub fn check_folder(archive: &crate::archive::Archive) -> Result<Vec<ConfigEntry>> {
    use crate::format::json::{self, J};
    let cfg = archive.get("configure.json").ok_or_else(|| Error::missing("configure.json").in_file(archive.path()))?;
    let value = json::parse(cfg).map_err(|e| e.in_member("configure.json").in_file(archive.path()))?;
    let root = J::root(&value);
    let located = |e: Error| e.in_member("configure.json").in_file(archive.path());
    let format = root.get("format").and_then(|f| f.str().map(str::to_string)).map_err(located)?;
    if format != "mlf-params" {
        return Err(located(
            root.get("format").expect("present").err(format!("expected \"mlf-params\", found {format:?}")),
        ));
    }
    let mut out = Vec::new();
    for (id, e) in root.get("params").and_then(|p| p.entries()).map_err(located)? {
        let entry = ConfigEntry {
            id: id.to_string(),
            file: e.get("file").and_then(|f| f.str().map(str::to_string)).map_err(located)?,
            bytes: e.get("bytes").and_then(|b| b.u64()).map_err(located)?,
            xxh64: e.get("xxh64").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            dtype: e.get("dtype").and_then(|b| b.str().map(str::to_string)).map_err(located)?,
            shape: e.get("shape").and_then(|s| s.array()?.iter().map(|d| d.u64()).collect()).map_err(located)?,
            names: e
                .opt("names")
                .map_err(located)?
                .map(|n| n.array()?.iter().map(|s| s.str().map(str::to_string)).collect())
                .transpose()
                .map_err(located)?
                .unwrap_or_default(),
        };
        let expected = format!("params/{id}.bin");
        if entry.file != expected {
            return Err(located(
                Error::invalid(format!(
                    "identifier {id} maps to {:?}; parameters must be stored as {expected:?}",
                    entry.file
                ))
                .at(format!("params.{id}.file")),
            ));
        }
        let data = archive.get(&entry.file).ok_or_else(|| {
            Error::missing(format!("the file of identifier {id}")).in_member(entry.file.clone()).in_file(archive.path())
        })?;
        if data.len() as u64 != entry.bytes {
            return Err(Error::mismatch(format!(
                "identifier {id}: {} bytes, configure.json says {}",
                data.len(),
                entry.bytes
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        if format!("{:016x}", xxh64(data)) != entry.xxh64 || id_for(data) != id {
            return Err(Error::mismatch(format!(
                "identifier {id}: the file's hash does not match (changed or damaged)"
            ))
            .in_member(entry.file.clone())
            .in_file(archive.path()));
        }
        out.push(entry);
    }
    Ok(out)
}

/// Packs a split folder (`configure.json`, `params/`, `code/`) into one tar at `out`, after
/// [`check_folder`]. Members are written in a stable order with fixed metadata.
pub fn pack_folder(dir: &Path, out: &Path) -> Result<usize> {
    let archive = crate::archive::Archive::open(dir)?;
    check_folder(&archive)?;
    let mut b = tar::Builder::new(Vec::new());
    let mut n = 0;
    for name in archive.names() {
        if !(name == "configure.json" || name.starts_with("params/") || name.starts_with("code/")) {
            continue;
        }
        let data = archive.get(name).expect("listed");
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, data.as_slice()).map_err(|e| Error::from(e).in_member(name.to_string()))?;
        n += 1;
    }
    let bytes = b.into_inner().map_err(Error::from)?;
    std::fs::write(out, bytes).map_err(|e| Error::from(e).in_file(out))?;
    Ok(n)
}
