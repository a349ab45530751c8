//! The layout of the build's output folder (`OUT_DIR/mlf/`), owned here alone: the name each
//! model's files go under, the files themselves, and [`locate`], which finds what the build
//! step wrote for a model again (`include_model!` calls it instead of knowing file names).
//!
//! For a model built as `<key>` (its file stem, MLF module and placement, and a hash of the
//! package, the model's canonical path and the module):
//!
//! - `OUT_DIR/mlf/<key>.rs`: the generated module;
//! - `OUT_DIR/mlf/<key>.json`: the side file ([`Located`]'s module name and summary, and the
//!   [`Stamp`] of the model file the module was generated from);
//! - `OUT_DIR/mlf/<key>.report.json`: the memory report, when the crate lists budgets;
//! - `OUT_DIR/mlf/<key>/`: the C sources, headers, objects and library, and embedded
//!   parameter files (`params/<name>.bin`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Placement;
use crate::support::hash::{FNV_OFFSET, fnv1a};
use crate::support::names;

/// Where the files of one model built with one placement go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `OUT_DIR/mlf`.
    root: PathBuf,
    /// The name the files go under.
    key: String,
}

impl Layout {
    /// The layout of the model at `canonical` (module `module` of an MLF that holds several)
    /// built by package `package` with parameters in `placement`, under `out_dir`.
    pub fn new(out_dir: &Path, package: &str, canonical: &Path, module: Option<&str>, placement: Placement) -> Layout {
        Layout { root: out_dir.join("mlf"), key: key(package, canonical, module, placement) }
    }

    /// The name the model's files go under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The folder of the model's C, objects, library and embedded parameter files.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join(&self.key)
    }

    /// The file an embedded parameter named `name` (sanitised) is written to, and its path
    /// relative to `OUT_DIR` (with a leading `/`), for `include_bytes!(concat!(env!("OUT_DIR"), …))`.
    pub fn param_file(&self, name: &str) -> (PathBuf, String) {
        (self.work_dir().join("params").join(format!("{name}.bin")), format!("/mlf/{}/params/{name}.bin", self.key))
    }

    /// The generated module.
    pub fn rust_file(&self) -> PathBuf {
        self.root.join(format!("{}.rs", self.key))
    }

    /// The generated module's path relative to `OUT_DIR` (with a leading `/`), for
    /// `include!(concat!(env!("OUT_DIR"), …))`.
    pub fn rust_file_in_out_dir(&self) -> String {
        format!("/mlf/{}.rs", self.key)
    }

    /// The environment variable the build step sets for the crate's compilation
    /// (`cargo::rustc-env=…=1`) when its latest run built this model: a module an earlier run
    /// left in `OUT_DIR` is no longer linked to its C, and `include_model!` refuses it.
    pub fn built_env(&self) -> String {
        let key: String =
            self.key.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        format!("MLF_BUILT_{key}")
    }

    /// The memory report written when the crate lists budgets.
    pub fn report_file(&self) -> PathBuf {
        self.root.join(format!("{}.report.json", self.key))
    }

    /// The side file [`locate`] reads.
    fn side_file(&self) -> PathBuf {
        self.root.join(format!("{}.json", self.key))
    }

    /// The side file's path and contents for a module named `module` generated from a model
    /// stamped `stamp`, summarised by `summary`.
    pub fn side_file_for(&self, module: &str, stamp: &Stamp, summary: &str) -> (PathBuf, Vec<u8>) {
        let side = SideFile { module: module.into(), stamp: stamp.clone(), summary: summary.into() };
        (self.side_file(), serde_json::to_string_pretty(&side).expect("JSON of strings").into_bytes())
    }
}

/// What the build step records beside a generated module.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SideFile {
    /// Default module name.
    module: String,
    /// The model file when the module was generated.
    stamp: Stamp,
    /// One-line description for the module's documentation.
    summary: String,
}

/// The name of a model's files: the file stem (and module), the placement, and a hash of the
/// package name, the model's canonical path and the module name.
fn key(package: &str, canonical: &Path, module: Option<&str>, placement: Placement) -> String {
    let stem = canonical.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let mut h = fnv1a(FNV_OFFSET, package.as_bytes());
    h = fnv1a(h, canonical.to_string_lossy().as_bytes());
    let mut name = names::sanitize(stem);
    if let Some(m) = module {
        h = fnv1a(h, m.as_bytes());
        name = format!("{name}-{}", names::sanitize(m));
    }
    match placement {
        Placement::Embedded => format!("{name}-{h:016x}"),
        p => format!("{name}-{h:016x}-{p}"),
    }
}

/// What the build step records of the model it built, for `include_model!` to tell whether the
/// model changed since without reading it: each file's size and modification time, and the
/// [`fingerprint`] of its bytes, consulted only when a size or time differs (a file touched but
/// not changed is still the model the module was generated from).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// [`fingerprint`] of the model's bytes.
    pub fingerprint: String,
    /// The model's files (one, named `""`, for a model file; every file of a model directory).
    pub files: Vec<FileStamp>,
}

/// The size and modification time of one file of a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Its path below the model directory (`""` for a model file).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Modification time: seconds and nanoseconds since the Unix epoch (0 when the file system
    /// records none).
    pub modified: (u64, u32),
}

impl Stamp {
    /// The stamp of the model file or directory at `path`: its files' sizes and times, then its
    /// bytes' fingerprint (the times are taken first, so a file written while it is read shows
    /// up as changed the next time).
    pub fn of(path: &Path) -> Result<Stamp> {
        let files = file_stamps(path)?;
        Ok(Stamp { fingerprint: fingerprint(path)?, files })
    }

    /// Whether the model at `path` is still the one stamped: without reading it when no file's
    /// size or time changed, else by its fingerprint.
    pub fn matches(&self, path: &Path) -> Result<bool> {
        if file_stamps(path)? == self.files {
            return Ok(true);
        }
        Ok(fingerprint(path)? == self.fingerprint)
    }
}

/// The sizes and times of the model file or every file of the model directory at `path`.
fn file_stamps(path: &Path) -> Result<Vec<FileStamp>> {
    let stamp = |name: String, file: &Path| -> Result<FileStamp> {
        let meta = std::fs::metadata(file).map_err(|e| Error::from(e).in_file(file))?;
        let since = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let modified = since.map_or((0, 0), |d| (d.as_secs(), d.subsec_nanos()));
        Ok(FileStamp { name, size: meta.len(), modified })
    };
    if path.is_dir() {
        files_below(path)?.into_iter().map(|(name, file)| stamp(name, &file)).collect()
    } else {
        Ok(vec![stamp(String::new(), path)?])
    }
}

/// Largest model file fingerprinted (the readers' limit, 1 GiB).
const MAX_FINGERPRINT_BYTES: u64 = 1 << 30;

/// A fingerprint of a model file or directory's bytes (to detect stale generated code): the
/// FNV-1a of the file, or of every file of the directory (its path below the directory, with `/`
/// separators, then its bytes) in the order of those paths.
pub fn fingerprint(path: &Path) -> Result<String> {
    let mut h = FNV_OFFSET;
    if path.is_dir() {
        for (name, file) in files_below(path)? {
            let data = crate::support::files::read_regular(&file, MAX_FINGERPRINT_BYTES, "model file")?;
            h = fnv1a(h, name.as_bytes());
            h = fnv1a(h, &data);
        }
    } else {
        let data = crate::support::files::read_regular(path, MAX_FINGERPRINT_BYTES, "model file")?;
        h = fnv1a(h, &data);
    }
    Ok(format!("{h:016x}"))
}

/// Most files a model directory may hold.
const MAX_FILES: usize = 100_000;
/// Deepest folder nesting a model directory may have.
const MAX_DEPTH: usize = 32;

/// The regular files below `root` by their `/`-separated path relative to it; links and other
/// special files are refused.
fn files_below(root: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(root.to_path_buf(), String::new(), 0)];
    while let Some((dir, prefix, depth)) = todo.pop() {
        if depth > MAX_DEPTH {
            return Err(Error::invalid(format!("folders nested deeper than {MAX_DEPTH}")).in_file(&dir));
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::from(e).in_file(&dir))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::from(e).in_file(&dir))?;
            let name = entry.file_name();
            let name = name
                .to_str()
                .ok_or_else(|| Error::invalid(format!("file name {name:?} is not UTF-8")).in_file(&dir))?;
            let member = format!("{prefix}{name}");
            let kind = entry.file_type().map_err(|e| Error::from(e).in_file(entry.path()))?;
            if kind.is_dir() {
                todo.push((entry.path(), format!("{member}/"), depth + 1));
            } else if kind.is_file() {
                out.insert(member, entry.path());
            } else {
                return Err(Error::invalid(format!(
                    "{member} is a link or special file; only regular files are allowed"
                ))
                .in_file(root));
            }
            if out.len() > MAX_FILES {
                return Err(Error::invalid(format!("more than {MAX_FILES} files")).in_file(root));
            }
        }
    }
    Ok(out)
}

/// A module the build step generated, found again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The module name to use when the caller gives none.
    pub module: String,
    /// One line for the module's documentation.
    pub summary: String,
    /// The generated module's path relative to `OUT_DIR` (with a leading `/`).
    pub rust_file_in_out_dir: String,
    /// The generated module.
    pub rust_file: PathBuf,
    /// The variable the build step's latest run set when it built the model
    /// ([`Layout::built_env`]).
    pub built_env: String,
}

/// Why [`locate`] found no module to include.
#[derive(Debug)]
pub enum NotLocated {
    /// The build step did not build the model (with this placement).
    NotBuilt,
    /// The model changed since the build step generated its module.
    Stale,
    /// The model file could not be read.
    Unreadable(Error),
}

/// Finds the module the build step wrote into `out_dir` for the model at `model` (module
/// `module`) of package `package`: with parameters in `placement`, or when `None`, the one
/// placement built (embedded when several or none were). Checks that the model has not changed
/// since.
pub fn locate(
    out_dir: &Path,
    package: &str,
    model: &Path,
    module: Option<&str>,
    placement: Option<Placement>,
) -> std::result::Result<Located, NotLocated> {
    let canonical = model.canonicalize().map_err(|e| NotLocated::Unreadable(Error::from(e).in_file(model)))?;
    let layout = |p| Layout::new(out_dir, package, &canonical, module, p);
    let chosen = match placement {
        Some(p) => layout(p),
        None => {
            let built: Vec<Layout> =
                Placement::ALL.map(layout).into_iter().filter(|l| l.rust_file().is_file()).collect();
            match <[Layout; 1]>::try_from(built) {
                Ok([only]) => only,
                Err(_) => layout(Placement::Embedded),
            }
        }
    };
    let side: SideFile = match std::fs::read(chosen.side_file()) {
        Ok(b) if chosen.rust_file().is_file() => serde_json::from_slice(&b)
            .map_err(|e| NotLocated::Unreadable(Error::invalid(e.to_string()).in_file(chosen.side_file())))?,
        _ => return Err(NotLocated::NotBuilt),
    };
    if !side.stamp.matches(&canonical).map_err(NotLocated::Unreadable)? {
        return Err(NotLocated::Stale);
    }
    Ok(Located {
        module: side.module,
        summary: side.summary,
        rust_file_in_out_dir: chosen.rust_file_in_out_dir(),
        rust_file: chosen.rust_file(),
        built_env: chosen.built_env(),
    })
}

/// How the header line of a module built for a shared arena starts.
const SHARED_ARENA_MARK: &str = "Memory in the shared arena `";

/// The header line of a module built for the shared arena `arena` (`include_model!` reads it
/// back, [`built_shared_arena`], to check that its `arena = …` says the same).
pub fn shared_arena_line(arena: &str) -> String {
    format!("{SHARED_ARENA_MARK}{arena}` (mlf_runtime::shared_arena! beside the module).")
}

/// The shared arena the generated module `rust_file` was built for, read from its header
/// (`None`: an arena of its own, or no such file).
pub fn built_shared_arena(rust_file: &Path) -> Option<String> {
    header_value(rust_file, SHARED_ARENA_MARK)
}

/// How the header lines of a module whose arena or parameters are in a link section start.
const SECTION_MARKS: [&str; 2] = ["The arena is in the link section `", "The parameters are in the link section `"];

/// The header lines of a module whose arena (`arena_section`) or parameters (`params_section`)
/// are in a link section ([`built_sections`] reads them back).
pub fn section_lines(arena: Option<&str>, params: Option<&str>) -> Vec<String> {
    let line = |mark: &str, s: Option<&str>| s.map(|s| format!("{mark}{s}` (placed by the linker script)."));
    [line(SECTION_MARKS[0], arena), line(SECTION_MARKS[1], params)].into_iter().flatten().collect()
}

/// The link sections (arena, parameters) the generated module `rust_file` was built with, read
/// from its header (`None`: the compiler's sections, or no such file).
pub fn built_sections(rust_file: &Path) -> (Option<String>, Option<String>) {
    (header_value(rust_file, SECTION_MARKS[0]), header_value(rust_file, SECTION_MARKS[1]))
}

/// The text between `mark` and the next backquote in the header of `rust_file`.
fn header_value(rust_file: &Path, mark: &str) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let file = std::fs::File::open(rust_file).ok()?;
    // The header is the first lines, all comments.
    let lines = BufReader::new(file).lines().take(8).map_while(|l| l.ok());
    lines
        .take_while(|l| l.starts_with("//"))
        .find_map(|l| l.split_once(mark).and_then(|(_, rest)| rest.split_once('`')).map(|(a, _)| a.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_modified(path: &Path, t: std::time::SystemTime) {
        std::fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
    }

    /// A model file, the module the build step generated for it, and the file's time.
    fn built(dir: &Path, bytes: &[u8]) -> (PathBuf, std::time::SystemTime) {
        let model = dir.join("model.tar");
        std::fs::write(&model, bytes).unwrap();
        let model = model.canonicalize().unwrap();
        let layout = Layout::new(dir, "pkg", &model, None, Placement::Embedded);
        std::fs::create_dir_all(layout.work_dir()).unwrap();
        std::fs::write(layout.rust_file(), "").unwrap();
        let (side, contents) = layout.side_file_for("m", &Stamp::of(&model).unwrap(), "a model");
        std::fs::write(side, contents).unwrap();
        (model.clone(), std::fs::metadata(&model).unwrap().modified().unwrap())
    }

    fn locate_in(dir: &Path, model: &Path) -> std::result::Result<Located, NotLocated> {
        locate(dir, "pkg", model, None, Some(Placement::Embedded))
    }

    #[test]
    fn an_unchanged_stamp_reads_no_byte_of_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let (model, time) = built(dir.path(), b"first version");
        assert!(locate_in(dir.path(), &model).is_ok());
        // Other bytes of the same size under the same time: the stamp alone is compared, so
        // locate does not see them (had it read the file, it would call the module stale).
        std::fs::write(&model, b"other version").unwrap();
        set_modified(&model, time);
        assert!(locate_in(dir.path(), &model).is_ok());
        // Any other time makes it look at the bytes, which changed.
        set_modified(&model, time + std::time::Duration::from_secs(1));
        assert!(matches!(locate_in(dir.path(), &model), Err(NotLocated::Stale)));
    }

    #[test]
    fn a_touched_model_is_still_the_same_a_changed_one_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let (model, time) = built(dir.path(), b"the model");
        set_modified(&model, time + std::time::Duration::from_secs(5));
        assert!(locate_in(dir.path(), &model).is_ok());
        std::fs::write(&model, b"the model, longer").unwrap();
        assert!(matches!(locate_in(dir.path(), &model), Err(NotLocated::Stale)));
    }

    #[test]
    fn a_directory_is_stamped_file_by_file() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model");
        std::fs::create_dir_all(model.join("codegen")).unwrap();
        std::fs::write(model.join("metadata.json"), "{}").unwrap();
        std::fs::write(model.join("codegen/lib.c"), "int x;").unwrap();
        let stamp = Stamp::of(&model).unwrap();
        let names: Vec<&str> = stamp.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["codegen/lib.c", "metadata.json"]);
        assert!(stamp.matches(&model).unwrap());
        std::fs::write(model.join("codegen/lib.c"), "int y = 1;").unwrap();
        assert!(!stamp.matches(&model).unwrap());
    }
}
