//! The instance's durable local state, kept beside the etcd data
//! directory as `eco-state.json`.
//!
//! Written atomically (see [`crate::base::atomic_file`]) and versioned by a
//! `format` field. JSON rather than a binary encoding: it is small, written
//! rarely, and an operator reading it at 3 a.m. should not need a tool.
//! A missing file means "this instance has never been part of a cluster";
//! a file that does not parse is an error, never treated as missing.

use crate::base::atomic_file::{AtomicWriteError, write_atomic};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The format this build writes and reads.
pub const FORMAT: u32 = 1;

/// File name of the state file, in the data directory's parent.
pub const FILE_NAME: &str = "eco-state.json";

/// What an instance remembers about the cluster it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalState {
    pub format: u32,
    pub cluster_name: String,
    pub instance_id: String,
    /// Which seeding of the cluster this instance's data belongs to
    /// (bootstrap = 1; every quorum-loss reseed adds one).
    pub incarnation: u64,
    /// The `--initial-cluster-token` of that incarnation.
    pub cluster_token: String,
    /// This instance's etcd member id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_id: Option<u64>,
    /// The last voting-member set `V_n` seen (instance ids, sorted).
    #[serde(default)]
    pub voting_members: Vec<String>,
    /// The started learners of the same member list (instance ids,
    /// sorted): a round after a second loss waits for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learners: Vec<String>,
    /// The scheme etcd's peer listener is started with: the one the
    /// cluster records for this member (`recovery::peer_scheme`). Absent
    /// in states written before TLS could be turned on for a running
    /// cluster, which ran `http`; a wrong value costs one restart (the
    /// listener follows the member list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_scheme: Option<crate::config::Scheme>,
}

/// Keys earlier versions wrote that this one ignores when reading
/// (`boots`: a start counter nothing read).
const RETIRED_KEYS: &[&str] = &["boots"];

impl LocalState {
    /// The state of instance `instance_id` in incarnation `incarnation` of
    /// `cluster_name` under `cluster_token`, member id not yet known.
    pub fn new(
        cluster_name: &str,
        instance_id: &str,
        incarnation: u64,
        cluster_token: String,
        voting_members: Vec<String>,
    ) -> Self {
        LocalState {
            format: FORMAT,
            cluster_name: cluster_name.to_string(),
            instance_id: instance_id.to_string(),
            incarnation,
            cluster_token,
            member_id: None,
            voting_members,
            learners: Vec::new(),
            peer_scheme: None,
        }
    }

    /// The same state, its member created with a peer URL of `scheme`.
    pub fn with_peer_scheme(mut self, scheme: crate::config::Scheme) -> Self {
        self.peer_scheme = Some(scheme);
        self
    }

    /// What the start and pass decisions read of it.
    pub fn summary(&self) -> recovery::startup::StateSummary {
        recovery::startup::StateSummary {
            incarnation: self.incarnation,
            member_id: self.member_id,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    #[error("cannot read state file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "state file {path} is malformed ({message}); eco will not guess: move it away only if you know this instance's data is disposable"
    )]
    Malformed { path: PathBuf, message: String },
    #[error(
        "state file {path} has format {found}, this eco reads formats 1 to {FORMAT}: it was written by a newer eco; run that release (or one that reads format {found})"
    )]
    TooNew { path: PathBuf, found: u32 },
    #[error(
        "state file {path} belongs to cluster {found:?}, but the config names cluster {expected:?}"
    )]
    OtherCluster {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("state file {path} belongs to instance {found:?}, but this instance is {expected:?}")]
    OtherInstance {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

/// The state file of the instance whose etcd data lives in `data_dir`.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    pub fn beside(data_dir: &Path) -> Self {
        let parent = data_dir.parent().unwrap_or(Path::new("."));
        Self {
            path: parent.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state; `Ok(None)` only when the file does not exist.
    pub fn load(&self) -> Result<Option<LocalState>, StateFileError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StateFileError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        let malformed = |e: serde_json::Error| StateFileError::Malformed {
            path: self.path.clone(),
            message: e.to_string(),
        };
        let version: Version = serde_json::from_slice(&bytes).map_err(malformed)?;
        if version.format > FORMAT {
            return Err(StateFileError::TooNew {
                path: self.path.clone(),
                found: version.format,
            });
        }
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).map_err(malformed)?;
        if let Some(fields) = value.as_object_mut() {
            for key in RETIRED_KEYS {
                fields.remove(*key);
            }
        }
        let state: LocalState = serde_json::from_value(value).map_err(malformed)?;
        Ok(Some(state))
    }

    /// Loads and checks that the state belongs to this cluster and instance.
    pub fn load_for(
        &self,
        cluster: &str,
        instance: &str,
    ) -> Result<Option<LocalState>, StateFileError> {
        let Some(state) = self.load()? else {
            return Ok(None);
        };
        if state.cluster_name != cluster {
            return Err(StateFileError::OtherCluster {
                path: self.path.clone(),
                found: state.cluster_name,
                expected: cluster.to_string(),
            });
        }
        if state.instance_id != instance {
            return Err(StateFileError::OtherInstance {
                path: self.path.clone(),
                found: state.instance_id,
                expected: instance.to_string(),
            });
        }
        Ok(Some(state))
    }

    /// Renames the state file aside (`eco-state.json.moved-<unix ms>`),
    /// never deleting it; used when its data was moved aside too.
    pub fn move_aside(&self) -> Result<(), StateFileError> {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let to = self.path.with_file_name(format!("{FILE_NAME}.moved-{ms}"));
        match std::fs::rename(&self.path, &to) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StateFileError::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Replaces the state atomically and durably.
    pub fn store(&self, state: &LocalState) -> Result<(), StateFileError> {
        let mut bytes =
            serde_json::to_vec_pretty(state).map_err(|e| StateFileError::Malformed {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        bytes.push(b'\n');
        write_atomic(&self.path, &bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::atomic_file::TEMP_PREFIX;

    fn sample() -> LocalState {
        LocalState {
            format: FORMAT,
            cluster_name: "c1".into(),
            instance_id: "eco-1".into(),
            incarnation: 1,
            cluster_token: "c1-1-abcdef".into(),
            member_id: Some(0x8e9e05c52164694d),
            voting_members: vec!["eco-1".into()],
            learners: Vec::new(),
            peer_scheme: Some(crate::config::Scheme::Https),
        }
    }

    #[test]
    fn a_state_file_of_an_earlier_version_is_read_without_its_retired_keys() {
        let d = tempfile::tempdir().unwrap();
        let f = StateFile::beside(&d.path().join("etcd"));
        let mut old = serde_json::to_value(sample()).unwrap();
        old["boots"] = serde_json::json!(7);
        std::fs::write(f.path(), serde_json::to_vec(&old).unwrap()).unwrap();
        assert_eq!(f.load().unwrap(), Some(sample()));
        old["bogus"] = serde_json::json!(1);
        std::fs::write(f.path(), serde_json::to_vec(&old).unwrap()).unwrap();
        let e = f.load().unwrap_err().to_string();
        assert!(e.contains("unknown field `bogus`"), "{e}");
    }

    #[test]
    fn round_trip_and_missing_is_none() {
        let d = tempfile::tempdir().unwrap();
        let f = StateFile::beside(&d.path().join("etcd"));
        assert_eq!(f.load().unwrap(), None);
        f.store(&sample()).unwrap();
        assert_eq!(f.load().unwrap(), Some(sample()));
        assert_eq!(f.path(), d.path().join(FILE_NAME));
    }

    /// A crash between writing the temporary file and renaming it (or in the
    /// middle of writing it) leaves the previous state readable.
    #[test]
    fn torn_write_never_leaves_a_corrupt_state() {
        let d = tempfile::tempdir().unwrap();
        let f = StateFile::beside(&d.path().join("etcd"));
        f.store(&sample()).unwrap();
        let newer = LocalState {
            incarnation: 2,
            ..sample()
        };
        let full = serde_json::to_vec_pretty(&newer).unwrap();
        for cut in [0, 1, full.len() / 2, full.len()] {
            let temp = d.path().join(format!("{TEMP_PREFIX}{FILE_NAME}.999.{cut}"));
            std::fs::write(&temp, &full[..cut]).unwrap();
            assert_eq!(f.load().unwrap(), Some(sample()), "cut at {cut}");
        }
        f.store(&newer).unwrap();
        assert_eq!(f.load().unwrap(), Some(newer));
    }

    #[test]
    fn malformed_and_foreign_states_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let f = StateFile::beside(&d.path().join("etcd"));
        std::fs::write(f.path(), b"{\"format\": 1, \"cluster_na").unwrap();
        let e = f.load().unwrap_err().to_string();
        assert!(e.contains("malformed") && e.contains(FILE_NAME), "{e}");

        std::fs::write(f.path(), b"{\"format\": 99}").unwrap();
        assert!(matches!(
            f.load(),
            Err(StateFileError::TooNew { found: 99, .. })
        ));

        f.store(&sample()).unwrap();
        assert!(matches!(
            f.load_for("other", "eco-1"),
            Err(StateFileError::OtherCluster { .. })
        ));
        assert!(matches!(
            f.load_for("c1", "eco-2"),
            Err(StateFileError::OtherInstance { .. })
        ));
        assert!(f.load_for("c1", "eco-1").unwrap().is_some());
    }
}
