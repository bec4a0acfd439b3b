//! Verifying a stored snapshot by restoring it: download it (the store's
//! sha256 checked), restore it without moving its revision (etcd's
//! trailing checksum checked) into a temporary directory beside eco's data
//! directory, start a throwaway one-member etcd on it on 127.0.0.1 (ports
//! the kernel picks), ask its revision and its HashKV at the recorded
//! revision, and judge them against the snapshot's record
//! (`recovery::restore_check`). The throwaway etcd is killed and its
//! directory removed whatever happens (the snapshot itself stays in the
//! store). The result is kept in the store, `<cluster>/verification.json`,
//! which every instance's snapshot writer reads.
//!
//! What it does not do: serve the restored data to anyone (the throwaway
//! etcd listens on 127.0.0.1 only, for the seconds of the check), or act
//! on a failure (the snapshot stays; an alert asks a human).

use super::restore::{self, RestoreRequest};
use super::take::meta;
use crate::etcd::access::EtcdAccess;
use crate::etcd::binaries::EtcdBinaries;
use crate::store::ObjectStore;
use crate::store::json_object::{self, JsonObjectError};
use recovery::restore_check::{self, KeySpaceHash, Recorded, Restored, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The result of the last verification, as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationRecord {
    /// The snapshot object verified.
    pub snapshot: String,
    pub at_unix_ms: u64,
    pub ok: bool,
    /// What was checked, or why it failed.
    pub detail: String,
    /// The instance that verified it.
    pub instance: String,
    /// When a verification last succeeded (this one or an earlier one).
    #[serde(default)]
    pub last_ok_unix_ms: Option<u64>,
    /// The format it is written in (the cluster's; absent: 1).
    #[serde(default = "recovery::cluster_version::untagged")]
    pub format: recovery::cluster_version::Format,
}

impl VerificationRecord {
    pub fn last(&self) -> restore_check::LastVerification {
        restore_check::LastVerification {
            snapshot: self.snapshot.clone(),
            at_unix_ms: self.at_unix_ms,
            ok: self.ok,
        }
    }
}

/// How the record is named in errors.
const WHAT: &str = "the verification record";

/// The object the last verification is kept in.
pub fn object_name(cluster: &str) -> String {
    format!("{cluster}/verification.json")
}

pub async fn read_record(
    store: &dyn ObjectStore,
    cluster: &str,
) -> Result<Option<VerificationRecord>, JsonObjectError> {
    json_object::read(store, &object_name(cluster), WHAT).await
}

pub async fn write_record(
    store: &dyn ObjectStore,
    cluster: &str,
    record: &VerificationRecord,
) -> Result<(), JsonObjectError> {
    json_object::write(store, &object_name(cluster), WHAT, record).await
}

/// What to verify, with what.
pub struct VerifyRequest<'a> {
    pub store: &'a dyn ObjectStore,
    /// The snapshot object.
    pub snapshot: &'a str,
    pub binaries: &'a EtcdBinaries,
    /// eco's access (its credentials, for HashKV when the snapshot holds
    /// etcd's authentication); the throwaway member is reached in plain
    /// text on 127.0.0.1.
    pub access: &'a EtcdAccess,
    /// The temporary directory is made in here (eco's data directory's
    /// parent: the same disk, room for a copy).
    pub work_in: &'a Path,
    /// Bounds the restore, and the throwaway member's start.
    pub timeout: Duration,
    /// What opens an encrypted snapshot (`snapshot.encryption.identity_file`).
    pub identities: Option<&'a crate::codec::Identities>,
}

fn number<T: std::str::FromStr>(m: &BTreeMap<String, String>, key: &str) -> Option<T> {
    m.get(key).and_then(|v| v.parse().ok())
}

/// The snapshot's record, from its object's metadata.
fn recorded(m: &BTreeMap<String, String>, name: &str) -> Recorded {
    let from_name = super::name::SnapshotName::parse(name).map(|n| n.revision);
    Recorded {
        revision: number(m, meta::REVISION).or(from_name).unwrap_or(0),
        hash: match (
            number(m, meta::HASH_KV),
            number(m, meta::HASH_REVISION),
            number(m, meta::COMPACT_REVISION),
        ) {
            (Some(hash), Some(revision), Some(compact_revision)) => Some(KeySpaceHash {
                hash,
                revision,
                compact_revision,
            }),
            _ => None,
        },
    }
}

/// Verifies `req.snapshot`; any failure on the way is a failed verdict
/// naming the step.
pub async fn verify(req: &VerifyRequest<'_>) -> Verdict {
    let dir = match WorkDir::make(req.work_in) {
        Ok(d) => d,
        Err(e) => {
            return Verdict::Failed {
                why: format!(
                    "cannot make a temporary directory in {}: {e}",
                    req.work_in.display()
                ),
            };
        }
    };
    match restore_and_ask(req, dir.path()).await {
        Ok((record, restored)) => restore_check::judge(&record, &restored),
        Err(why) => Verdict::Failed { why },
    }
}

/// The verification's own directory (mode 0700: it holds a copy of the
/// whole key space), removed when dropped: the snapshot stays in the
/// store, so this copy is never the only one.
pub(crate) struct WorkDir(PathBuf);

impl WorkDir {
    pub(crate) fn make(parent: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let path = parent.join(format!(".eco-verify-{:08x}", rand::random::<u32>()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!(dir = %self.0.display(), error = %e, "cannot remove the verification's directory");
        }
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

async fn restore_and_ask(
    req: &VerifyRequest<'_>,
    dir: &Path,
) -> Result<(Recorded, Restored), String> {
    let file = dir.join("snapshot.db");
    let info = restore::fetch_verified(req.store, req.snapshot, &file, req.identities)
        .await
        .map_err(|e| e.to_string())?;
    let record = recorded(&info.metadata, req.snapshot);
    let hash_at = match record.hash {
        Some(h) => HashAt::Revision(h.revision),
        None => HashAt::Nothing,
    };
    let restored = restore_file_and_ask(
        &Throwaway {
            binaries: req.binaries,
            access: req.access,
            timeout: req.timeout,
        },
        &file,
        dir,
        hash_at,
    )
    .await?;
    let _ = std::fs::remove_file(&file);
    Ok((record, restored))
}

/// Which HashKV the throwaway member is asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HashAt {
    Nothing,
    /// At this revision (the one a snapshot's record names).
    Revision(i64),
    /// At the revision it answers with (a file with no record).
    Current,
}

/// The binaries, access and time bound of a throwaway member.
pub(crate) struct Throwaway<'a> {
    pub(crate) binaries: &'a EtcdBinaries,
    pub(crate) access: &'a EtcdAccess,
    pub(crate) timeout: Duration,
}

/// What a snapshot file holds, asked of a throwaway member it is restored
/// into (in a temporary directory under `work_in`, removed afterwards):
/// its revision and its key space's HashKV at that revision. The file is
/// only read.
pub async fn inspect_file(
    file: &Path,
    binaries: &EtcdBinaries,
    access: &EtcdAccess,
    work_in: &Path,
    timeout: Duration,
) -> Result<Restored, String> {
    let dir = WorkDir::make(work_in).map_err(|e| {
        format!(
            "cannot make a temporary directory in {}: {e}",
            work_in.display()
        )
    })?;
    restore_file_and_ask(
        &Throwaway {
            binaries,
            access,
            timeout,
        },
        file,
        dir.path(),
        HashAt::Current,
    )
    .await
}

/// Restores `file` into `dir`, runs a throwaway member on it and asks it.
async fn restore_file_and_ask(
    t: &Throwaway<'_>,
    file: &Path,
    dir: &Path,
    hash_at: HashAt,
) -> Result<Restored, String> {
    let (mut etcd, client_url) = launch(t, file, dir).await?;
    let asked = ask(t, &client_url, hash_at, dir, &mut etcd).await;
    let _ = etcd.kill().await;
    asked
}

/// The member name of the throwaway etcd a verification starts
/// (`--name=eco-verify`): what tells it from the member's etcd among a
/// machine's processes.
pub const MEMBER_NAME: &str = "eco-verify";

/// Restores `file` (its revision kept) into `dir` and starts a throwaway
/// one-member etcd on it, on 127.0.0.1 at ports the kernel picks: the
/// process (killed when dropped) and its client URL. [`ask`] waits until
/// it answers.
pub(crate) async fn launch(
    t: &Throwaway<'_>,
    file: &Path,
    dir: &Path,
) -> Result<(tokio::process::Child, String), String> {
    let spec = crate::etcd::flags::VerifySpec {
        name: MEMBER_NAME.into(),
        data_dir: dir.join("data"),
        client_port: free_port()?,
        peer_port: free_port()?,
        unsafe_no_fsync: recovery::etcd_flags::acceptance("--unsafe-no-fsync", t.binaries.version)
            == recovery::etcd_flags::Acceptance::Accepted,
    };
    let client_url = spec.client_url();
    restore::restore_file(
        file,
        &RestoreRequest {
            data_dir: spec.data_dir.clone(),
            name: spec.name.clone(),
            peer_url: spec.peer_url(),
            token: format!("eco-verify-{:08x}", rand::random::<u32>()),
            etcdutl: t.binaries.etcdutl.clone(),
            etcdctl: t.binaries.etcdctl.clone(),
            timeout: t.timeout,
            bump_revision: false,
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.join("etcd.log")).map_err(|e| e.to_string())?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut command = tokio::process::Command::new(&t.binaries.etcd);
    command
        .args(crate::etcd::flags::verify_args(&spec))
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log2)
        .kill_on_drop(true)
        // A Ctrl-C in a terminal reaches `eco restore`, which drops
        // (and so kills) this member, not the member directly.
        .process_group(0);
    crate::etcd::supervisor::withhold_from_etcd(&mut command);
    let etcd = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", t.binaries.etcd.display()))?;
    Ok((etcd, client_url))
}

/// The restored member's revision and HashKV, once it answers.
pub(crate) async fn ask(
    t: &Throwaway<'_>,
    endpoint: &str,
    hash_at: HashAt,
    dir: &Path,
    etcd: &mut tokio::process::Child,
) -> Result<Restored, String> {
    let deadline = Instant::now() + t.timeout;
    let timeout = t.access.call_timeout();
    loop {
        // An etcd that exited (its data refused, a port taken meanwhile)
        // fails the verification now, not at the deadline.
        if let Ok(Some(status)) = etcd.try_wait() {
            let tail = tail_of(&dir.join("etcd.log"));
            return Err(format!(
                "the restored etcd exited ({status}); its log ends: {tail}"
            ));
        }
        let last = match t.access.connect(endpoint).await {
            Ok(mut client) => {
                match crate::etcd::probe::status(&mut client, endpoint, timeout).await {
                    Ok(st) if st.has_leader() => {
                        let at = match hash_at {
                            HashAt::Nothing => None,
                            HashAt::Revision(r) => Some(r),
                            HashAt::Current => Some(st.revision),
                        };
                        let hash = match at {
                            None => None,
                            Some(at) => Some(
                                match tokio::time::timeout(timeout, client.hash_kv(at)).await {
                                    Ok(Ok(h)) => Ok(KeySpaceHash {
                                        hash: h.hash(),
                                        revision: at,
                                        compact_revision: h.compact_version(),
                                    }),
                                    Ok(Err(e)) => Err(e.to_string()),
                                    Err(_) => Err(format!("no answer within {timeout:?}")),
                                },
                            ),
                        };
                        return Ok(Restored {
                            revision: st.revision,
                            hash,
                        });
                    }
                    Ok(_) => "no leader yet".to_string(),
                    Err(e) => e.to_string(),
                }
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            let tail = tail_of(&dir.join("etcd.log"));
            return Err(format!(
                "the restored etcd did not answer within {:?} ({last}); its log ends: {tail}",
                t.timeout
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn tail_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
