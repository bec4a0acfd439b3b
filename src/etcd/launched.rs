//! The etcd binary the local member was last launched on, kept beside the
//! state file (`etcd-launched.json`, written atomically at every launch):
//! an eco restarted in the middle of a rolling upgrade relaunches its
//! member on the version it ran (`recovery::upgrade::launch_at_start`),
//! not on a newer binary whose turn has not come.

use crate::atomic_file::write_atomic;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launched {
    /// The file launched (symbolic links resolved).
    pub etcd: PathBuf,
    /// Its version then (`3.4.23`).
    pub version: String,
}

/// The record beside the pid file (and the state file).
pub fn path_beside(pid_file: &Path) -> PathBuf {
    pid_file.with_file_name("etcd-launched.json")
}

/// The record, `None` when there is none or it cannot be read (a warning:
/// the configured binary is launched then).
pub fn load(path: &Path) -> Option<Launched> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot read the last launched etcd");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the last launched etcd's record is unreadable; ignoring it");
            None
        }
    }
}

pub fn store(path: &Path, launched: &Launched) -> anyhow::Result<()> {
    let bytes = serde_json::to_vec_pretty(launched)?;
    write_atomic(path, &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_unreadable() {
        let d = tempfile::tempdir().unwrap();
        let p = path_beside(&d.path().join("etcd.pid"));
        assert_eq!(load(&p), None);
        let l = Launched {
            etcd: "/usr/bin/etcd".into(),
            version: "3.4.23".into(),
        };
        store(&p, &l).unwrap();
        assert_eq!(load(&p), Some(l));
        std::fs::write(&p, "{").unwrap();
        assert_eq!(load(&p), None);
    }
}
