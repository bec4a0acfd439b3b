//! What this instance last applied of the ACL's passwords:
//! `eco-acl.json` beside the state file (the data directory's parent),
//! written atomically (`crate::base::atomic_file`, mode 0600). etcd cannot read
//! a password back, so eco keeps a salted fingerprint of each
//! `(user, password)` it set — never the password — and the cluster id it
//! set them in: a password is set again when its file changed, or when
//! the cluster is another one (a reseed from a snapshot may hold older
//! passwords).
//!
//! A separate small file rather than a field of `eco-state.json`: the
//! state file is read strictly (an older eco refuses unknown keys) and
//! decides how the instance starts; losing this one costs only setting
//! the passwords once more. A missing or unreadable file starts empty
//! with a new salt (logged).

use crate::base::atomic_file::{AtomicWriteError, write_atomic};
use recovery::acl::{Applied, Fingerprint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File name, in the data directory's parent.
pub const FILE_NAME: &str = "eco-acl.json";

const FORMAT: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    format: u32,
    /// Hex; salts every fingerprint in this file.
    salt: String,
    /// The cluster the passwords were set in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_id: Option<u64>,
    /// User → fingerprint of the password eco set.
    #[serde(default)]
    passwords: BTreeMap<String, Fingerprint>,
}

/// The record, as on disk.
#[derive(Debug)]
pub struct AppliedFile {
    path: PathBuf,
    salt: Vec<u8>,
    cluster_id: Option<u64>,
    passwords: BTreeMap<String, Fingerprint>,
}

impl AppliedFile {
    /// The record beside `data_dir`'s state file.
    pub fn beside(data_dir: &Path) -> Self {
        let parent = data_dir.parent().unwrap_or(Path::new("."));
        Self::load(&parent.join(FILE_NAME))
    }

    fn load(path: &Path) -> Self {
        let fresh = || Self {
            path: path.to_path_buf(),
            salt: rand::random::<[u8; 16]>().to_vec(),
            cluster_id: None,
            passwords: BTreeMap::new(),
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return fresh(),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read the record of applied passwords; they are set again once");
                return fresh();
            }
        };
        let parsed = serde_json::from_slice::<OnDisk>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|d| {
                let salt = hex::decode(&d.salt).map_err(|e| e.to_string())?;
                if d.format != FORMAT || salt.is_empty() {
                    return Err(format!("format {} or an empty salt", d.format));
                }
                Ok((d, salt))
            });
        match parsed {
            Ok((d, salt)) => Self {
                path: path.to_path_buf(),
                salt,
                cluster_id: d.cluster_id,
                passwords: d.passwords,
            },
            Err(why) => {
                tracing::warn!(file = %path.display(), error = %why, "the record of applied passwords is malformed; they are set again once");
                fresh()
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Salts the fingerprints (of this file).
    pub fn salt(&self) -> &[u8] {
        &self.salt
    }

    /// What was applied in cluster `cluster_id` (nothing, for another).
    pub fn applied_in(&self, cluster_id: u64) -> Applied {
        Applied {
            passwords: if self.cluster_id == Some(cluster_id) {
                self.passwords.clone()
            } else {
                BTreeMap::new()
            },
        }
    }

    /// Records that `user`'s password with `fingerprint` was set in
    /// `cluster_id` (`None`: the user is gone or has no password), durably.
    pub fn record(
        &mut self,
        cluster_id: u64,
        user: &str,
        fingerprint: Option<&Fingerprint>,
    ) -> Result<(), AtomicWriteError> {
        if self.cluster_id != Some(cluster_id) {
            self.cluster_id = Some(cluster_id);
            self.passwords.clear();
        }
        match fingerprint {
            Some(fp) => self.passwords.insert(user.to_string(), fp.clone()),
            None => self.passwords.remove(user),
        };
        let on_disk = OnDisk {
            format: FORMAT,
            salt: hex::encode(&self.salt),
            cluster_id: self.cluster_id,
            passwords: self.passwords.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&on_disk).unwrap_or_default();
        bytes.push(b'\n');
        write_atomic(&self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn records_survive_a_restart_per_cluster_and_a_bad_file_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("etcd");
        let mut f = AppliedFile::beside(&data);
        assert!(f.applied_in(7).passwords.is_empty());
        let salt = f.salt().to_vec();
        f.record(7, "root", Some(&"fp-root".to_string())).unwrap();
        f.record(7, "app", Some(&"fp-app".to_string())).unwrap();
        f.record(7, "app", None).unwrap();
        let again = AppliedFile::beside(&data);
        assert_eq!(again.salt(), salt);
        assert_eq!(
            again.applied_in(7).passwords,
            BTreeMap::from([("root".to_string(), "fp-root".to_string())])
        );
        assert!(again.applied_in(8).passwords.is_empty(), "another cluster");
        let mode = std::fs::metadata(again.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert!(text.contains("fp-root"));

        let mut other = AppliedFile::beside(&data);
        other.record(8, "app", Some(&"fp-2".to_string())).unwrap();
        assert!(
            AppliedFile::beside(&data)
                .applied_in(7)
                .passwords
                .is_empty()
        );

        std::fs::write(again.path(), b"{ not json").unwrap();
        let fresh = AppliedFile::beside(&data);
        assert!(fresh.applied_in(8).passwords.is_empty());
        assert_ne!(fresh.salt(), salt);
    }
}
