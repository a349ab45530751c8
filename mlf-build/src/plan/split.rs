//! External parameters: every parameter in its own file named by a short identifier derived
//! from its content (identical tensors share one file), and for constant arrays taken out of the
//! C, the table of pointers the C reads them through.

use std::collections::BTreeMap;

use crate::model::ModelDesc;
use crate::support::bytes::Bytes;
use crate::support::dtype::DType;
use crate::support::hash::{id_for, xxh64};

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
    /// Per-operator constant arrays taken out of the C, if any.
    pub arrays: Option<ArrayTable>,
    /// Read-only data sections taken out of LLVM objects, if any (their files come first in
    /// [`Split::files`]).
    pub objects: Option<ObjectSections>,
    /// What binds a pack of these files to the code: the model digest ([`model_digest`]) and the
    /// public key packs must be signed with, if any.
    pub binding: PackBinding,
}

/// What the generated module requires of a parameter pack (its `PACK`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackBinding {
    /// The model digest: interface and parameter table.
    pub digest: [u8; 32],
    /// The Ed25519 public key packs must be signed with (`None`: not checked).
    pub key: Option<[u8; 32]>,
}

/// The model digest of `desc` split into `files`: its inputs and outputs (name, dtype, shape, in
/// order) and its parameter table (identifier, bytes, xxh64 of each file, in order). A pack
/// records the digest of the split it was made from, the generated module carries its own, and a
/// pack whose digest is another (another model, another version, the same shape with other
/// weights) is refused when it is opened. The module's name and the placement are not part of it:
/// one pack serves the model resident, streamed or lazily loaded, under any name.
pub fn model_digest(desc: &ModelDesc, files: &[ParamFile]) -> [u8; 32] {
    let mut parts: Vec<Vec<u8>> = vec![b"mlf-model-digest 1".to_vec()];
    for (what, tensors) in [("input", &desc.inputs), ("output", &desc.outputs)] {
        for t in tensors {
            let shape: Vec<String> = t.shape.iter().map(u64::to_string).collect();
            parts.push(format!("{what} {} {} [{}]", t.name, t.dtype, shape.join(",")).into_bytes());
        }
    }
    for f in files {
        parts.push(format!("param {} {} {:016x}", f.id, f.bytes(), f.xxh64).into_bytes());
    }
    mlf_pack::sign::digest(parts.iter().map(Vec::as_slice))
}

/// A digest in hex (as `configure.json` and `cargo mlf inspect` show it).
pub fn digest_hex(d: &[u8; 32]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read-only data sections taken out of a model's LLVM objects: every relocation that reached
/// one is retargeted to the parameter region (resident) or the staging buffer (streamed) at the
/// section's fixed offset there, which the module exports under [`ObjectSections::REGION_SYMBOL`].
#[derive(Clone, Debug, Default)]
pub struct ObjectSections {
    /// Each taken section.
    pub sections: Vec<ObjectSection>,
    /// Each function an object defines that reads taken sections (in its code, through the
    /// functions it calls, or through data that points at them), with the sections (indices
    /// into `sections`).
    pub users: BTreeMap<String, Vec<usize>>,
    /// The call graph was too large to follow within its budget: every function counts as
    /// reading every section.
    pub read_by_all: bool,
    /// Read-only data left in the objects (literal pools, sections under
    /// [`ArrayTable::THRESHOLD`] bytes or holding addresses or exported symbols): how many
    /// sections and their bytes.
    pub kept: (usize, u64),
}

/// One read-only data section taken out of an LLVM object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSection {
    /// The object's archive member.
    pub member: String,
    /// The section's name.
    pub name: String,
    /// Its index in the object's section table.
    pub index: usize,
    /// Index of its file in [`Split::files`] (among the first files).
    pub file: usize,
}

impl ObjectSections {
    /// The C name of the region the retargeted relocations point into (renamed with the model's
    /// prefix), exported by the generated module's parameter region or staging buffer.
    pub const REGION_SYMBOL: &str = "mlf_object_params";

    /// The files of `sections` (indices into `sections`), each once, in order.
    pub fn files_of(&self, sections: &[usize]) -> Vec<usize> {
        distinct(sections.iter().map(|&k| self.sections[k].file))
    }

    /// The sections `function` reads (every section when the call graph was not followed).
    pub fn read_by(&self, function: &str) -> Vec<usize> {
        if self.read_by_all {
            return (0..self.sections.len()).collect();
        }
        self.users.get(function).cloned().unwrap_or_default()
    }

    /// The number of files the sections take (they are the first files of the split).
    pub fn file_count(&self) -> usize {
        self.sections.iter().map(|s| s.file + 1).max().unwrap_or(0)
    }
}

/// Constant arrays taken out of a model's C: the C reads each through entry `k` of a table of
/// pointers (`mlf_param_table[k]`) that the generated module points at the array's bytes, in
/// the resident region or the staging buffer.
#[derive(Clone, Debug, Default)]
pub struct ArrayTable {
    /// Table entry `k`: the C array's name and the index of its file in [`Split::files`].
    pub slots: Vec<(String, usize)>,
    /// Each function that reads arrays (in its body, through functions it calls, or, for a
    /// main, in the arguments of its calls), with the entries it reads.
    pub users: BTreeMap<String, Vec<usize>>,
    /// AOT: the main's calls that read arrays, in order, each with the entries it reads; the C
    /// main calls `mlf_param_stage(i)` before call `i` (streamed and lazy placements).
    pub steps: Vec<(String, Vec<usize>)>,
    /// Arrays left in the C (smaller than [`ArrayTable::THRESHOLD`]): how many and their bytes.
    pub kept: (usize, u64),
}

impl ArrayTable {
    /// The C name of the table of pointers the rewritten C defines (renamed with the model's
    /// prefix like every symbol its C defines).
    pub const TABLE_SYMBOL: &str = "mlf_param_table";

    /// The C name of the function pointer a rewritten AOT main calls before each call that reads
    /// arrays (streamed and lazy placements).
    pub const HOOK_SYMBOL: &str = "mlf_param_stage";

    /// Arrays smaller than this many bytes stay in the C: the reference that replaces an array
    /// (a `ParamRef` with its 17-byte identifier, size and hash, plus its table entry and
    /// binding: about 40 bytes on a 32-bit target) would take as much flash as the array.
    pub const THRESHOLD: u64 = 32;

    /// The distinct files of `slots` in the order they first appear.
    pub fn files_of(&self, slots: &[usize]) -> Vec<usize> {
        distinct(slots.iter().map(|&k| self.slots[k].1))
    }
}

/// `files` each once, in the order they first appear.
fn distinct(files: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for f in files {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

impl Split {
    /// Bytes of constants left in the code: small constant arrays in the C, read-only data kept
    /// in LLVM objects.
    pub fn kept_bytes(&self) -> u64 {
        self.arrays.as_ref().map_or(0, |t| t.kept.1) + self.objects.as_ref().map_or(0, |o| o.kept.1)
    }

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

    /// Adds every parameter of a model, in order, recording each one's file in `of_param`.
    pub fn add_params(&mut self, params: &[crate::model::ParamInfo]) {
        for p in params {
            let k = self.add(&p.name, p.dtype, &p.shape, &p.data);
            self.of_param.push(k);
        }
    }
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
