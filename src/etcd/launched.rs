//! The etcd binaries the local member was launched on, kept beside the
//! state file (`etcd-launched.json`, written atomically): the last launch,
//! and the last binary the member answered on — recorded only once that
//! etcd answered, so a binary that never started is never taken for one
//! that runs. An eco restarted in the middle of a rolling upgrade, or
//! after a step whose etcd never answered, relaunches its member on the
//! version that ran (`recovery::upgrade::launch_at_start`).
//!
//! A record of an older eco (one binary, written at every launch, not
//! known to have answered) reads as no record: the configured binary is
//! launched. The file carries the format it is written in (`"format"`,
//! this build's newest; absent: format 1, which eco 0.1.0 wrote and which
//! reads past the key); one of a format this eco does not read (a newer
//! eco's) reads as no record, with a warning.

use crate::base::atomic_file::write_atomic;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One etcd binary the member was launched on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launched {
    /// The file launched (symbolic links resolved).
    pub etcd: PathBuf,
    /// Its version then (`3.4.23`).
    pub version: String,
}

/// What `etcd-launched.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The binary of the last launch, answered or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched: Option<Launched>,
    /// The last binary the member answered on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<Launched>,
}

impl LaunchRecord {
    /// The last launch, when it has not answered (yet).
    pub fn never_answered(&self) -> Option<&Launched> {
        self.launched
            .as_ref()
            .filter(|l| self.answered.as_ref() != Some(*l))
    }
}

/// The record beside the pid file (and the state file).
pub fn path_beside(pid_file: &Path) -> PathBuf {
    pid_file.with_file_name("etcd-launched.json")
}

/// The record; empty when there is none or it cannot be read (a warning:
/// the configured binary is launched then).
pub fn load(path: &Path) -> LaunchRecord {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LaunchRecord::default(),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot read the last launched etcd");
            return LaunchRecord::default();
        }
    };
    let value: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
    if let Some(format) = value.as_ref().ok().and_then(|v| v.get("format"))
        && recovery::cluster_version::unreadable(format.as_u64(), "").is_some()
    {
        tracing::warn!(file = %path.display(), %format, "the last launched etcd's record is of a format this eco does not read (a newer eco wrote it); ignoring it");
        return LaunchRecord::default();
    }
    match value.and_then(serde_json::from_value) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the last launched etcd's record is unreadable; ignoring it");
            LaunchRecord::default()
        }
    }
}

pub fn store(path: &Path, record: &LaunchRecord) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(record)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("format".into(), recovery::cluster_version::NEWEST.into());
    }
    let bytes = serde_json::to_vec_pretty(&value)?;
    write_atomic(path, &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_unreadable_and_an_older_ecos_record() {
        let d = tempfile::tempdir().unwrap();
        let p = path_beside(&d.path().join("etcd.pid"));
        assert_eq!(load(&p), LaunchRecord::default());
        let old = Launched {
            etcd: "/opt/etcd/3.5.1/etcd".into(),
            version: "3.5.1".into(),
        };
        let new = Launched {
            etcd: "/opt/etcd/3.5.2/etcd".into(),
            version: "3.5.2".into(),
        };
        let r = LaunchRecord {
            launched: Some(new.clone()),
            answered: Some(old.clone()),
        };
        store(&p, &r).unwrap();
        assert_eq!(load(&p), r);
        assert_eq!(r.never_answered(), Some(&new));
        let ran = LaunchRecord {
            launched: Some(old.clone()),
            answered: Some(old),
        };
        assert_eq!(ran.never_answered(), None);
        std::fs::write(&p, "{").unwrap();
        assert_eq!(load(&p), LaunchRecord::default());
        std::fs::write(&p, r#"{"etcd": "/usr/bin/etcd", "version": "3.4.23"}"#).unwrap();
        assert_eq!(load(&p), LaunchRecord::default(), "an older eco's record");
        // Format 1 (eco 0.1.0's: no key) reads; a later format does not.
        let v1 = serde_json::to_string(&r).unwrap();
        std::fs::write(&p, &v1).unwrap();
        assert_eq!(load(&p), r);
        store(&p, &r).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let later = text.replace(
            &format!("\"format\": {}", recovery::cluster_version::NEWEST),
            "\"format\": 99",
        );
        assert_ne!(later, text);
        std::fs::write(&p, later).unwrap();
        assert_eq!(load(&p), LaunchRecord::default(), "a newer eco's record");
    }
}
