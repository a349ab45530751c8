//! Reading the files a user names without trusting them: only regular files are read (a FIFO
//! would block forever, `/dev/zero` never ends, a directory is not a file), and the size limit
//! is checked before a byte is read and again while reading (a file can grow).

use std::io::Read;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// What a path is when it is not a regular file, for messages (`FIFO`, `directory`, …).
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "directory";
    }
    if ft.is_symlink() {
        return "symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "FIFO";
        }
        if ft.is_char_device() {
            return "character device";
        }
        if ft.is_block_device() {
            return "block device";
        }
        if ft.is_socket() {
            return "socket";
        }
    }
    "special file"
}

/// Refuses anything but a regular file at `path` (symbolic links are followed: the user named
/// the path), with an error naming the path and what it is.
pub fn require_regular(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    Ok(meta)
}

fn not_regular(path: &Path, meta: &std::fs::Metadata) -> Error {
    Error::new(ErrorKind::NotARegularFile { name: path.display().to_string(), what: kind_of(meta) }).in_file(path)
}

/// Reads the whole regular file at `path`, refusing one over `limit` bytes (`what` names it in
/// that error: `archive`, `kmodel`, `input file`, …). The type of the file is checked before it
/// is opened, so a FIFO or a device is refused without blocking.
pub fn read_regular(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    let meta = require_regular(path)?;
    let too_large = |size: u64| Error::new(ErrorKind::TooLarge { what: what.to_string(), size, limit }).in_file(path);
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    // The path may have been replaced between the check and the open: check what was opened.
    let opened = file.metadata().map_err(|e| Error::from(e).in_file(path))?;
    if !opened.is_file() {
        return Err(not_regular(path, &opened));
    }
    let mut data = Vec::with_capacity(usize::try_from(opened.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut data).map_err(|e| Error::from(e).in_file(path))?;
    if data.len() as u64 > limit {
        return Err(too_large(data.len() as u64));
    }
    Ok(data)
}

/// Reads at most the first `n` bytes of the regular file at `path`.
pub fn read_head(path: &Path, n: u64) -> Result<Vec<u8>> {
    require_regular(path)?;
    let file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let opened = file.metadata().map_err(|e| Error::from(e).in_file(path))?;
    if !opened.is_file() {
        return Err(not_regular(path, &opened));
    }
    let mut head = Vec::new();
    file.take(n).read_to_end(&mut head).map_err(|e| Error::from(e).in_file(path))?;
    Ok(head)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // Would block forever if it were opened.
        let e = read_regular(&fifo, 1 << 20, "file").unwrap_err();
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        let e = read_head(&fifo, 16).unwrap_err();
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_regular(&zero, 1 << 20, "file").unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
        let e = read_regular(dir.path(), 1 << 20, "file").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn refuses_a_file_over_the_limit_before_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big");
        std::fs::write(&f, [0u8; 100]).unwrap();
        let e = read_regular(&f, 99, "parameter file").unwrap_err();
        assert!(e.to_string().contains("parameter file is 100 bytes, more than the limit of 99 bytes"), "{e}");
        assert_eq!(read_regular(&f, 100, "file").unwrap().len(), 100);
    }
}
