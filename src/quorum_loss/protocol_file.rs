//! The protocol's durable state, `eco-recovery.state` beside the state
//! file: postcard, versioned by `recovery::fenced::persisted`, written
//! atomically (temp file, fsync, rename). A promise is on disk before the
//! message carrying it leaves. A missing file is "no state"; a file that
//! does not decode is an error, never treated as missing (a forgotten
//! promise could choose two values).

use crate::base::atomic_file::{AtomicWriteError, write_atomic};
use recovery::fenced::{PersistError, PersistedState, decode, encode};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "eco-recovery.state";

#[derive(Debug, thiserror::Error)]
pub enum ProtocolFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Format {
        path: PathBuf,
        #[source]
        source: PersistError,
    },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

#[derive(Clone, Debug)]
pub struct ProtocolFile {
    path: PathBuf,
}

impl ProtocolFile {
    /// The file beside the data directory `data_dir` (in its parent).
    pub fn beside(data_dir: &Path) -> Self {
        let parent = data_dir.parent().unwrap_or(Path::new("."));
        ProtocolFile {
            path: parent.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn load(&self) -> Result<Option<PersistedState>, ProtocolFileError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => decode(&bytes)
                .map(Some)
                .map_err(|source| ProtocolFileError::Format {
                    path: self.path.clone(),
                    source,
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ProtocolFileError::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    pub fn store(&self, state: &PersistedState) -> Result<(), ProtocolFileError> {
        let bytes = encode(state).map_err(|source| ProtocolFileError::Format {
            path: self.path.clone(),
            source,
        })?;
        write_atomic(&self.path, &bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery::fenced::Ballot;

    #[test]
    fn round_trips_and_refuses_garbage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = ProtocolFile::beside(&dir.path().join("etcd"));
        assert_eq!(f.load().expect("missing is none"), None);
        let s = PersistedState {
            incarnation: 2,
            voters: vec!["a".into(), "b".into(), "c".into()],
            promised: Some(Ballot::new(3, "b")),
            frozen: true,
            ..PersistedState::default()
        };
        f.store(&s).expect("store");
        assert_eq!(f.load().expect("load"), Some(s));
        std::fs::write(f.path(), b"\x09garbage").expect("write");
        assert!(f.load().is_err(), "a corrupt file is an error, not 'none'");
    }
}
