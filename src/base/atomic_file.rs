//! Writing a file so that a crash at any point leaves either the old
//! content or the new one, never a mix: write a temporary file in the same
//! directory, fsync it, rename it over the target, fsync the directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Prefix of temporary files; readers ignore files that start with it.
pub const TEMP_PREFIX: &str = ".tmp-";

/// Why an atomic write failed. The target is unchanged in every case.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path} ({step}): {source}")]
pub struct AtomicWriteError {
    pub path: PathBuf,
    pub step: &'static str,
    #[source]
    pub source: std::io::Error,
}

/// Replaces `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    let err = |step: &'static str| {
        let path = path.to_path_buf();
        move |source| AtomicWriteError { path, step, source }
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))
        .map_err(err("naming"))?;
    let temp = dir.join(format!(
        "{TEMP_PREFIX}{}.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(err("creating the temporary file"))?;
        file.write_all(bytes)
            .map_err(err("writing the temporary file"))?;
        file.sync_all().map_err(err("syncing the temporary file"))?;
        drop(file);
        std::fs::rename(&temp, path).map_err(err("renaming into place"))?;
        sync_dir(dir).map_err(err("syncing the directory"))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// fsyncs a directory so that a rename or create inside it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let leftovers: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn failed_rename_leaves_target_and_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("target");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), b"x").unwrap();
        let e = write_atomic(&p, b"new").unwrap_err();
        assert_eq!(e.step, "renaming into place");
        assert!(p.is_dir());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
