//! The gossip key file (`gossip.key_file`): read at start, then re-read
//! while eco runs. Every [`CHECK_EVERY`] its metadata is compared with what
//! was last seen (a new inode after an atomic rename or a Kubernetes secret
//! update, a new size, mtime or mode); on a change the file is read again
//! under the same mode rule as at start, and when its keys differ from the
//! ones installed the node's keyring is replaced (`Gossip::set_keys`): no
//! restart, no leave. A change that cannot be used (unreadable, not keys,
//! open to other users, gone) keeps the current keys and logs one error
//! naming the file; the file is tried again at its next change. No key
//! material is ever logged.

use crate::base::events::Event;
use crate::base::file_stamp::FileStamp;
use crate::base::secret_file::SecretFileError;
use gossip::{Keyring, KeysHandle, SealError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracing::Instrument;

/// How often the key file is looked at for a change.
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// The setting the file comes from, as errors and logs name it.
const SETTING: &str = "gossip.key_file";

#[derive(Debug, thiserror::Error)]
pub(super) enum KeyFileError {
    /// Unreadable, or open to other users.
    #[error(transparent)]
    Read(#[from] SecretFileError),
    #[error("the gossip keys in {SETTING} {}: {cause}", path.display())]
    Keys { path: PathBuf, cause: SealError },
}

/// The keys in `path` (checked as a secret), and the SHA-256 of the text
/// they came from.
fn read_keys(path: &Path, cluster: &str) -> Result<(Keyring, [u8; 32]), KeyFileError> {
    let text = crate::base::secret_file::read(path, SETTING)?;
    let keys = Keyring::parse(&text, cluster).map_err(|cause| KeyFileError::Keys {
        path: path.to_path_buf(),
        cause,
    })?;
    Ok((keys, Sha256::digest(text.as_bytes()).into()))
}

/// The key file and what eco last made of it.
pub(super) struct KeyFile {
    path: PathBuf,
    cluster: String,
    seen: FileStamp,
    /// SHA-256 of the text whose keys are installed: a file rewritten with
    /// the same text installs nothing, and the text itself is not kept.
    installed: [u8; 32],
    /// The last change could not be used (and was logged).
    failing: bool,
}

impl KeyFile {
    /// Reads the keys at start (an error here stops eco, as a bad file
    /// should before anything runs).
    pub(super) fn load(path: &Path, cluster: &str) -> Result<(Self, Keyring), KeyFileError> {
        // Looked at before it is read: a change after this is seen next.
        let seen = FileStamp::of(path);
        let (keys, installed) = read_keys(path, cluster)?;
        let file = Self {
            path: path.to_path_buf(),
            cluster: cluster.to_string(),
            seen,
            installed,
            failing: false,
        };
        Ok((file, keys))
    }

    /// The keys to install: `Some` when the file changed since the last
    /// look and holds other keys than the installed ones, in a file that
    /// passes the start's checks. A change that cannot be used is logged
    /// once and leaves the installed keys alone.
    fn changed_keys(&mut self) -> Option<Keyring> {
        let seen = FileStamp::of(&self.path);
        if seen == self.seen {
            return None;
        }
        self.seen = seen;
        match read_keys(&self.path, &self.cluster) {
            Err(e) => {
                self.failing = true;
                tracing::error!(
                    file = %self.path.display(),
                    error = %e,
                    "cannot use the changed {SETTING}; gossip keeps its current keys until the file changes again"
                );
                None
            }
            Ok((_, digest)) if digest == self.installed => {
                if std::mem::take(&mut self.failing) {
                    tracing::info!(
                        file = %self.path.display(),
                        "{SETTING} is usable again and holds the keys gossip already uses"
                    );
                }
                None
            }
            Ok((keys, digest)) => {
                self.installed = digest;
                self.failing = false;
                Some(keys)
            }
        }
    }

    /// Re-reads the file every [`CHECK_EVERY`] and installs its new keys
    /// in the node, until the node stops or the watch is dropped.
    pub(super) fn watch(self, keys: KeysHandle) -> KeyFileWatch {
        KeyFileWatch(tokio::spawn(self.run(keys).in_current_span()))
    }

    async fn run(mut self, keys: KeysHandle) {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is at once; the file was just read.
        tick.tick().await;
        // Ends with the node (or when the watch is dropped).
        while !keys.is_stopped() {
            tick.tick().await;
            let Some(ring) = self.changed_keys() else {
                continue;
            };
            let count = ring.key_count();
            if keys.set_keys(ring).is_err() {
                break;
            }
            crate::event!(
                info,
                Event::GossipKeysInstalled,
                file = %self.path.display(),
                keys = count,
                "gossip keys re-read from {SETTING} and installed: the first key seals, every key opens"
            );
        }
    }
}

/// The task of [`KeyFile::watch`]; dropping it ends the task.
pub(super) struct KeyFileWatch(tokio::task::JoinHandle<()>);

impl Drop for KeyFileWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
    const B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

    /// Replaces the file as the runbook says: a new file, renamed over.
    fn replace(path: &Path, text: &str, mode: u32) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn new_keys_are_installed_once_and_bad_changes_keep_the_current_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gossip.keys");
        replace(&path, &format!("{A}\n"), 0o600);
        let (mut file, keys) = KeyFile::load(&path, "c").unwrap();
        assert_eq!(keys.key_count(), 1);
        assert!(file.changed_keys().is_none(), "nothing changed");

        replace(&path, &format!("{A}\n{B}\n"), 0o600);
        assert_eq!(file.changed_keys().map(|k| k.key_count()), Some(2));
        assert!(file.changed_keys().is_none(), "installed once");

        // Not keys, open to others, gone: each keeps the installed keys.
        replace(&path, "not hex\n", 0o600);
        assert!(file.changed_keys().is_none());
        assert!(file.failing);
        replace(&path, &format!("{B}\n"), 0o644);
        assert!(file.changed_keys().is_none());
        std::fs::remove_file(&path).unwrap();
        assert!(file.changed_keys().is_none());
        assert!(
            file.changed_keys().is_none(),
            "a gone file is not retried until it changes"
        );

        // Back with the installed keys: nothing to install, no longer failing.
        replace(&path, &format!("{A}\n{B}\n"), 0o600);
        assert!(file.changed_keys().is_none());
        assert!(!file.failing);
        // A chmod alone is looked at, and installs nothing.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(file.changed_keys().is_none());

        replace(&path, &format!("{B}\n"), 0o600);
        assert_eq!(file.changed_keys().map(|k| k.key_count()), Some(1));
    }

    #[test]
    fn errors_name_the_file_and_never_hold_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gossip.keys");
        replace(&path, &format!("{A}\n{}\n", &B[..60]), 0o600);
        let err = KeyFile::load(&path, "c").err().unwrap().to_string();
        assert!(
            err.contains("gossip.key_file")
                && err.contains("gossip.keys")
                && err.contains("line 2"),
            "{err}"
        );
        assert!(!err.contains(A) && !err.contains(&B[..60]), "{err}");
        replace(&path, &format!("{A}\n"), 0o644);
        let err = KeyFile::load(&path, "c").err().unwrap().to_string();
        assert!(err.contains("gossip.keys") && err.contains("0644"), "{err}");
    }
}
