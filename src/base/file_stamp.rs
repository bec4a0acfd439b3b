//! Whether a file changed since it was last looked at, without reading it:
//! its device, inode, mode, size and modification and change times. An
//! atomic rename (a new inode), a Kubernetes secret update, an edit in
//! place or a `chmod` all change the stamp. Files eco re-reads while it
//! runs (the gossip key file, the config for `[auth]`, the TLS files shown
//! in `/status`) are read again only when their stamp changed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What a file looked like; any difference means it changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileStamp {
    File {
        device: u64,
        inode: u64,
        mode: u32,
        len: u64,
        modified: (i64, i64),
        changed: (i64, i64),
    },
    /// The file could not be looked at (gone, not allowed).
    Unreadable(std::io::ErrorKind),
}

impl FileStamp {
    /// The stamp of `path` now (symlinks followed).
    pub fn of(path: &Path) -> Self {
        match std::fs::metadata(path) {
            Ok(m) => FileStamp::File {
                device: m.dev(),
                inode: m.ino(),
                mode: m.mode(),
                len: m.len(),
                modified: (m.mtime(), m.mtime_nsec()),
                changed: (m.ctime(), m.ctime_nsec()),
            },
            Err(e) => FileStamp::Unreadable(e.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_a_rewrite_and_a_chmod_change_the_stamp() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert!(matches!(FileStamp::of(&path), FileStamp::Unreadable(_)));
        std::fs::write(&path, "a").unwrap();
        let first = FileStamp::of(&path);
        assert_eq!(FileStamp::of(&path), first, "unchanged");
        std::fs::write(dir.path().join("g"), "a").unwrap();
        std::fs::rename(dir.path().join("g"), &path).unwrap();
        let renamed = FileStamp::of(&path);
        assert_ne!(renamed, first, "a new inode");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_ne!(FileStamp::of(&path), renamed, "a new mode");
    }
}
