//! The config file, looked at again while eco runs, for `[auth]` changes
//! (the ACL is reconciled without a restart). Like the gossip key file:
//! its metadata is compared with what was last seen (a new inode after an
//! atomic rename, a new size, mtime, ctime or mode); on a change the file
//! is read, and when its content differs (SHA-256) it is parsed and
//! validated like at start. A change that cannot be used is logged once
//! and the last good config is kept; the file is tried again at its next
//! change. Only `[auth]`'s roles, users and password files take effect
//! this way (the rest, `[auth.token]` and `root_password_file`'s path
//! included, at the next start).

use crate::base::file_stamp::FileStamp;
use crate::config::{Config, load_file};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn digest(path: &Path) -> Option<[u8; 32]> {
    std::fs::read(path).ok().map(|b| Sha256::digest(&b).into())
}

/// The config file and what was last made of it.
pub struct ConfigWatch {
    path: PathBuf,
    seen: FileStamp,
    /// SHA-256 of the content last used (or found unusable).
    content: Option<[u8; 32]>,
}

impl ConfigWatch {
    /// Watches `path`, whose current content is the config eco runs with.
    pub fn new(path: &Path) -> Self {
        let seen = FileStamp::of(path);
        Self {
            path: path.to_path_buf(),
            seen,
            content: digest(path),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The config, when the file changed since the last look and holds a
    /// valid config with other content; a change that cannot be used is
    /// logged once (naming the file and the problem) and gives `None`.
    pub fn changed(&mut self) -> Option<Config> {
        let seen = FileStamp::of(&self.path);
        if seen == self.seen {
            return None;
        }
        self.seen = seen;
        let content = digest(&self.path);
        if content.is_some() && content == self.content {
            return None;
        }
        self.content = content;
        match load_file(&self.path) {
            Ok(config) => Some(config),
            Err(e) => {
                tracing::error!(
                    file = %self.path.display(),
                    error = %e,
                    "the changed config file cannot be used; the ACL keeps following the last good one until the file changes again"
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n";

    fn replace(path: &Path, text: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn a_changed_valid_file_is_given_once_and_a_bad_one_never() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eco.toml");
        replace(&path, BASE);
        let mut w = ConfigWatch::new(&path);
        assert!(w.changed().is_none(), "nothing changed");
        replace(&path, BASE);
        assert!(w.changed().is_none(), "same content");
        replace(&path, &format!("{BASE}[log]\nlevel = \"debug\"\n"));
        assert_eq!(w.changed().map(|c| c.log.level), Some("debug".to_string()));
        assert!(w.changed().is_none(), "given once");
        replace(&path, &format!("{BASE}[log]\nlevel = \"loud\"\n"));
        assert!(w.changed().is_none(), "invalid");
        std::fs::remove_file(&path).unwrap();
        assert!(w.changed().is_none(), "gone");
        replace(&path, &format!("{BASE}[log]\nlevel = \"warn\"\n"));
        assert_eq!(w.changed().map(|c| c.log.level), Some("warn".to_string()));
    }
}
