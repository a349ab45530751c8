//! Writing into a folder the user names (`cargo mlf split -o DIR`, `run -o DIR`, `pack -o FILE`,
//! a build script's split folder, plan pictures) without following links: a link already in
//! the folder (`DIR/configure.json → ~/.bashrc`, `DIR/params → /etc`) is refused, never written
//! through. Files are written to a fresh temporary file beside their place and renamed over it,
//! so a reader never sees half a file and the rename replaces the folder entry itself.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// A folder outputs are written into. The folder itself may be reached through a link (the
/// user named it); nothing inside it is.
#[derive(Clone, Debug)]
pub struct OutputDir {
    root: PathBuf,
}

impl OutputDir {
    /// The folder `root`, created (with its parents) when missing.
    pub fn create(root: &Path) -> Result<OutputDir> {
        std::fs::create_dir_all(root).map_err(|e| Error::from(e).in_file(root))?;
        let meta = std::fs::metadata(root).map_err(|e| Error::from(e).in_file(root))?;
        if !meta.is_dir() {
            return Err(Error::invalid("is not a folder").in_file(root));
        }
        Ok(OutputDir { root: root.to_path_buf() })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Whether the folder has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        let mut entries = std::fs::read_dir(&self.root).map_err(|e| Error::from(e).in_file(&self.root))?;
        Ok(entries.next().is_none())
    }

    /// Writes `data` to `rel` (a relative path of normal components) inside the folder, creating
    /// the folders on the way; refuses when any of them, or the file, is a link or not what it
    /// must be. Leaves the file untouched when it already holds `data` (keeps mtimes stable for
    /// incremental builds).
    pub fn write(&self, rel: &str, data: &[u8]) -> Result<PathBuf> {
        let path = self.place(rel)?;
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.file_type().is_file() {
                return Err(refused(&path, &meta));
            }
            if meta.len() == data.len() as u64 && std::fs::read(&path).is_ok_and(|old| old == data) {
                return Ok(path);
            }
        }
        let dir = path.parent().expect("a file inside the folder");
        let mut builder = tempfile::Builder::new();
        builder.prefix(".mlf-");
        // As any new file: read-write for everyone the user's umask lets (tempfile's own
        // default, 0600, would make outputs private).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::from(e).in_file(dir))?;
        tmp.write_all(data).map_err(|e| Error::from(e).in_file(tmp.path()))?;
        tmp.persist(&path).map_err(|e| Error::from(e.error).in_file(&path))?;
        Ok(path)
    }

    /// Removes `rel` (a file, or a folder with everything in it) when it exists; a link is
    /// removed itself, never what it points to.
    pub fn remove(&self, rel: &str) -> Result<()> {
        let path = self.place(rel)?;
        match std::fs::symlink_metadata(&path) {
            Err(_) => Ok(()),
            Ok(meta) if meta.file_type().is_dir() => {
                std::fs::remove_dir_all(&path).map_err(|e| Error::from(e).in_file(&path))
            }
            Ok(_) => std::fs::remove_file(&path).map_err(|e| Error::from(e).in_file(&path)),
        }
    }

    /// The path of `rel` inside the folder, with every folder on the way created and checked
    /// (a real folder, not a link).
    fn place(&self, rel: &str) -> Result<PathBuf> {
        let rel_path = Path::new(rel);
        if rel.is_empty() || !rel_path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(Error::invalid(format!("{rel:?} is not a plain relative path")).in_file(&self.root));
        }
        let mut dir = self.root.clone();
        let parts: Vec<_> = rel_path.components().collect();
        for part in &parts[..parts.len() - 1] {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_dir() => {}
                Ok(meta) => return Err(refused(&dir, &meta)),
                Err(_) => std::fs::create_dir(&dir).map_err(|e| Error::from(e).in_file(&dir))?,
            }
        }
        Ok(dir.join(parts[parts.len() - 1]))
    }
}

/// Writes `data` to the file `path` (its folder may be reached through a link; the file itself
/// may not be one).
pub fn write_file(path: &Path, data: &[u8]) -> Result<()> {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(d), Some(n)) => (if d.as_os_str().is_empty() { Path::new(".") } else { d }, n),
        _ => return Err(Error::invalid("is not a file path").in_file(path)),
    };
    let name = name.to_str().ok_or_else(|| Error::invalid("the file name is not UTF-8").in_file(path))?;
    OutputDir::create(dir)?.write(name, data).map(drop)
}

fn refused(path: &Path, meta: &std::fs::Metadata) -> Error {
    let what = crate::support::files::kind_of(meta);
    Error::invalid(format!(
        "is a {what} where mlf writes an output; mlf never writes through a link or over a special file (remove it first)"
    ))
    .in_file(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Outputs get the permissions any new file gets: 0666 less the umask (not tempfile's 0600).
    #[test]
    fn outputs_are_written_with_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = OutputDir::create(dir.path()).unwrap().write("a/b.bin", b"x").unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain), "as std::fs::write under the same umask");
    }

    #[test]
    fn never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        symlink(&victim, out.join("configure.json")).unwrap();
        let victims = dir.path().join("victims");
        std::fs::create_dir(&victims).unwrap();
        symlink(&victims, out.join("params")).unwrap();
        let o = OutputDir::create(&out).unwrap();
        let e = o.write("configure.json", b"{}").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link where mlf writes an output"), "{e}");
        let e = o.write("params/p1.bin", b"x").unwrap_err();
        assert!(e.to_string().contains("params: is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read_dir(&victims).unwrap().count(), 0);
        // Removing a link removes the link only.
        o.remove("params").unwrap();
        assert!(victims.is_dir());
        o.write("params/p1.bin", b"x").unwrap();
        assert_eq!(std::fs::read(out.join("params/p1.bin")).unwrap(), b"x");
        assert!(o.write("../x", b"").is_err());
        assert!(o.write("/x", b"").is_err());
    }
}
