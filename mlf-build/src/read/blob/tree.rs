//! A blob's modules and their import tree: a CSR list of each module's imports (`row_ptr` has one more item than there
//! are modules; module `i` imports `child_indices[row_ptr[i]..row_ptr[i + 1]]`).
//!
//! TVM numbers modules so that every import comes after its importer (it refuses to export
//! otherwise), so a valid tree has no cycles; this reader requires that.

use serde_json::{Value, json};

use super::layout::{LIB_KEY, Layout};
use super::payload::{Framing, ModuleClass, Payload};
use crate::error::{Error, Result};
use crate::support::bytes::Bytes;

/// A parsed blob.
#[derive(Clone, Debug)]
pub struct Blob {
    /// Its layout.
    pub layout: Layout,
    /// The whole blob, `nbytes` header included (exactly `8 + nbytes` bytes).
    pub bytes: Bytes,
    /// The modules, in index order (root = index 0, DFS order as TVM numbers them). In the
    /// legacy layout the `_import_tree` entry is not a module.
    pub modules: Vec<Module>,
    /// The import tree (CSR). `None` for a legacy blob without `_import_tree` (TVM ≤ 0.6 or a
    /// root without imports), where every module is an import of the host library.
    pub import_tree: Option<ImportTree>,
    /// The payload framing variant that read this blob, when a payload depended on it (device
    /// modules' function info, `metal`); `None` otherwise.
    pub framing: Option<Framing>,
    /// Non-fatal findings (payloads of the tvm-ffi layout that could not be decoded, …).
    pub warnings: Vec<String>,
}

/// One module of a blob.
#[derive(Clone, Debug)]
pub struct Module {
    /// Its index in the module list (and the import tree).
    pub index: usize,
    /// The type key (`GraphExecutorFactory`, `cuda`, `_lib`, `relax.VMExecutable`, …).
    pub type_key: String,
    /// Offset of its key's length field inside the blob.
    pub offset: usize,
    /// The payload bytes as stored: everything after the key up to the next entry (legacy), or
    /// the contents of the payload string (tvm-ffi). Empty for `_lib`.
    pub payload: Bytes,
    /// What the payload holds, where its format is known.
    pub decoded: Payload,
}

impl Module {
    /// The payload size in bytes.
    pub fn bytes(&self) -> u64 {
        self.payload.len() as u64
    }

    /// What kind of module this is.
    pub fn class(&self) -> ModuleClass {
        ModuleClass::of(&self.type_key)
    }
}

/// Deepest nesting [`ImportTree::to_json`] renders; deeper imports are marked `"truncated"`.
pub const MAX_RENDER_DEPTH: usize = 64;

/// A validated import tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportTree {
    /// CSR row pointers (`modules + 1` items, starting at 0).
    pub row_ptr: Vec<u64>,
    /// CSR child indices.
    pub child_indices: Vec<u64>,
}

impl ImportTree {
    /// Builds a tree from each module's import list (indices).
    pub fn from_imports(imports: &[Vec<u64>]) -> ImportTree {
        let mut row_ptr = vec![0u64];
        let mut child_indices = Vec::new();
        for row in imports {
            child_indices.extend_from_slice(row);
            row_ptr.push(child_indices.len() as u64);
        }
        ImportTree { row_ptr, child_indices }
    }

    /// Number of modules the tree describes.
    pub fn len(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// True when it describes no module.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the tree against the number of modules. Errors name `row_ptr[i]` or
    /// `child_indices[j]`.
    pub fn validate(&self, modules: usize) -> Result<()> {
        if self.row_ptr.len() != modules + 1 {
            return Err(Error::mismatch(format!(
                "row_ptr has {} items but there are {modules} modules (expected {})",
                self.row_ptr.len(),
                modules + 1
            ))
            .at("row_ptr"));
        }
        if self.row_ptr.first() != Some(&0) {
            return Err(Error::invalid("row_ptr must start at 0").at("row_ptr[0]"));
        }
        for i in 1..self.row_ptr.len() {
            if self.row_ptr[i] < self.row_ptr[i - 1] {
                return Err(Error::invalid(format!(
                    "row_ptr decreases ({} after {})",
                    self.row_ptr[i],
                    self.row_ptr[i - 1]
                ))
                .at(format!("row_ptr[{i}]")));
            }
        }
        let last = self.row_ptr[modules];
        if last != self.child_indices.len() as u64 {
            return Err(Error::mismatch(format!(
                "row_ptr ends at {last} but there are {} child indices",
                self.child_indices.len()
            ))
            .at(format!("row_ptr[{modules}]")));
        }
        for parent in 0..modules {
            let (a, b) = (self.row_ptr[parent] as usize, self.row_ptr[parent + 1] as usize);
            for j in a..b {
                let c = self.child_indices[j];
                if c >= modules as u64 {
                    return Err(Error::invalid(format!(
                        "module {parent} imports module {c}, but there are only {modules}"
                    ))
                    .at(format!("child_indices[{j}]")));
                }
                if c <= parent as u64 {
                    return Err(Error::invalid(format!(
                        "module {parent} imports module {c}, which does not come after it (TVM numbers imports after their importer; this is a cycle or a corrupt index)"
                    ))
                    .at(format!("child_indices[{j}]")));
                }
            }
        }
        Ok(())
    }

    /// The imports of module `i` (empty when out of range).
    pub fn children(&self, i: usize) -> &[u64] {
        let a = self.row_ptr.get(i).copied().unwrap_or(0) as usize;
        let b = self.row_ptr.get(i + 1).copied().unwrap_or(0) as usize;
        self.child_indices.get(a..b).unwrap_or(&[])
    }

    /// The tree rebuilt as nested JSON from the root (module 0):
    /// `{"index":0,"type_key":"…","imports":[…]}`. A module imported more than once is expanded
    /// the first time and then shown as `{"index":N,"type_key":"…","shared":true}`.
    pub fn to_json(&self, modules: &[Module]) -> Value {
        if modules.is_empty() {
            return Value::Null;
        }
        self.render(modules, &|i, key, _, shown, imports| match shown {
            Shown::Again => json!({"index": i, "type_key": key, "shared": true}),
            Shown::TooDeep => json!({"index": i, "type_key": key, "truncated": true}),
            Shown::First => json!({"index": i, "type_key": key, "imports": imports}),
        })
    }

    /// The tree as indented text lines (`0 GraphExecutorFactory` / `  1 _lib`).
    pub fn to_lines(&self, modules: &[Module]) -> Vec<String> {
        if modules.is_empty() {
            return Vec::new();
        }
        self.render(modules, &|i, key, depth, shown, imports: Vec<Vec<String>>| {
            let pad = "  ".repeat(depth.min(MAX_RENDER_DEPTH));
            let line = match shown {
                Shown::Again => format!("{pad}{i} {key} (shared, shown above)"),
                Shown::TooDeep => format!("{pad}{i} {key} (deeper imports not shown)"),
                Shown::First => format!("{pad}{i} {key}"),
            };
            std::iter::once(line).chain(imports.into_iter().flatten()).collect()
        })
    }

    /// Walks the tree from the root depth first, expanding each module the first time it is
    /// reached and no deeper than [`MAX_RENDER_DEPTH`]; `show(index, type_key, depth, how,
    /// rendered imports)` renders one module.
    fn render<T>(&self, modules: &[Module], show: &impl Fn(usize, &str, usize, Shown, Vec<T>) -> T) -> T {
        let mut seen = vec![false; modules.len()];
        self.render_from(0, modules, &mut seen, 0, show)
    }

    fn render_from<T>(
        &self,
        i: usize,
        modules: &[Module],
        seen: &mut [bool],
        depth: usize,
        show: &impl Fn(usize, &str, usize, Shown, Vec<T>) -> T,
    ) -> T {
        let key = modules.get(i).map(|m| m.type_key.as_str()).unwrap_or("?");
        if seen.get(i).copied().unwrap_or(true) {
            return show(i, key, depth, Shown::Again, Vec::new());
        }
        seen[i] = true;
        if depth >= MAX_RENDER_DEPTH {
            return show(i, key, depth, Shown::TooDeep, Vec::new());
        }
        let imports =
            self.children(i).iter().map(|&c| self.render_from(c as usize, modules, seen, depth + 1, show)).collect();
        show(i, key, depth, Shown::First, imports)
    }
}

/// How a module appears where the tree is rendered.
enum Shown {
    /// Expanded, with its imports.
    First,
    /// Reached again (imported more than once, or an out-of-range index).
    Again,
    /// Past [`MAX_RENDER_DEPTH`]: its imports are not shown.
    TooDeep,
}

/// The tree of a legacy blob without `_import_tree`: every module is an import of the host
/// library, which is not itself in the module list.
pub fn implicit_root_json(modules: &[Module]) -> Value {
    let imports: Vec<Value> =
        modules.iter().map(|m| json!({"index": m.index, "type_key": m.type_key, "imports": []})).collect();
    json!({"index": null, "type_key": LIB_KEY, "implicit": true, "imports": imports})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(n: usize) -> Vec<Module> {
        (0..n)
            .map(|index| Module {
                index,
                type_key: format!("m{index}"),
                offset: 0,
                payload: crate::support::bytes::Bytes::new(Vec::new()),
                decoded: Payload::Opaque,
            })
            .collect()
    }

    #[test]
    fn renders_shared_and_deep_imports() {
        // 0 imports 1 and 2, both import 3 (shared).
        let t = ImportTree::from_imports(&[vec![1, 2], vec![3], vec![3], vec![]]);
        let ms = modules(4);
        assert_eq!(t.to_lines(&ms), ["0 m0", "  1 m1", "    3 m3", "  2 m2", "    3 m3 (shared, shown above)"]);
        assert_eq!(
            t.to_json(&ms),
            json!({"index": 0, "type_key": "m0", "imports": [
                {"index": 1, "type_key": "m1", "imports": [{"index": 3, "type_key": "m3", "imports": []}]},
                {"index": 2, "type_key": "m2", "imports": [{"index": 3, "type_key": "m3", "shared": true}]},
            ]})
        );
        // A chain deeper than the rendering limit.
        let n = MAX_RENDER_DEPTH + 3;
        let rows: Vec<Vec<u64>> = (0..n).map(|i| if i + 1 < n { vec![i as u64 + 1] } else { vec![] }).collect();
        let t = ImportTree::from_imports(&rows);
        let ms = modules(n);
        let lines = t.to_lines(&ms);
        assert_eq!(lines.len(), MAX_RENDER_DEPTH + 1);
        assert_eq!(
            lines[MAX_RENDER_DEPTH].trim(),
            format!("{MAX_RENDER_DEPTH} m{MAX_RENDER_DEPTH} (deeper imports not shown)")
        );
        let mut v = &t.to_json(&ms);
        for _ in 0..MAX_RENDER_DEPTH {
            v = &v["imports"][0];
        }
        assert_eq!(
            v,
            &json!({"index": MAX_RENDER_DEPTH, "type_key": format!("m{MAX_RENDER_DEPTH}"), "truncated": true})
        );
        assert!(t.to_lines(&[]).is_empty());
        assert_eq!(t.to_json(&[]), Value::Null);
    }

    #[test]
    fn validates() {
        let t = ImportTree::from_imports(&[vec![1], vec![]]);
        assert_eq!(t.row_ptr, vec![0, 1, 1]);
        t.validate(2).unwrap();
        assert_eq!(t.validate(3).unwrap_err().field.as_deref(), Some("row_ptr"));
        let cyc = ImportTree::from_imports(&[vec![1], vec![0]]);
        assert_eq!(cyc.validate(2).unwrap_err().field.as_deref(), Some("child_indices[1]"));
        let out = ImportTree::from_imports(&[vec![5], vec![]]);
        assert_eq!(out.validate(2).unwrap_err().field.as_deref(), Some("child_indices[0]"));
        let bad = ImportTree { row_ptr: vec![0, 2, 1], child_indices: vec![1] };
        assert_eq!(bad.validate(2).unwrap_err().field.as_deref(), Some("row_ptr[2]"));
        let start = ImportTree { row_ptr: vec![1, 1], child_indices: vec![] };
        assert_eq!(start.validate(1).unwrap_err().field.as_deref(), Some("row_ptr[0]"));
        let end = ImportTree { row_ptr: vec![0, 1], child_indices: vec![] };
        assert_eq!(end.validate(1).unwrap_err().field.as_deref(), Some("row_ptr[1]"));
    }
}
