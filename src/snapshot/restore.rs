//! Restoring a snapshot into a fresh data directory for a new one-member
//! cluster. Works for any etcd snapshot, not only eco's.
//!
//! Order: a stored snapshot's sha256 is checked as it downloads; a file's
//! trailing checksum is checked by the tool as it restores it into a
//! staging directory beside the target (eco reads it too when the tool
//! fails, to say why), which is renamed into place only once the tool
//! succeeded, so a failed restore or a corrupt file never leaves a
//! half-written data directory. An existing non-empty target is
//! refused: eco never restores over data.

use super::trailing_hash::TrailingHash;
use crate::codec::{CodecError, Identities, Layers};
use crate::store::{ObjectInfo, ObjectStore, StoreError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("snapshot {what} is corrupt: {why}; refusing to restore it")]
    Corrupt { what: String, why: String },
    #[error("refusing to restore into {0}: it exists and is not empty (move it aside first)")]
    TargetNotEmpty(PathBuf),
    #[error("refusing to restore into {0}: it exists and is not a directory")]
    TargetNotADirectory(PathBuf),
    #[error("neither etcdutl nor etcdctl is available to restore with")]
    NoTool,
    #[error("{tool} snapshot restore failed: {output}")]
    Tool { tool: String, output: String },
    #[error("{tool} snapshot restore did not finish within {timeout:?}")]
    Timeout { tool: String, timeout: Duration },
    #[error("restore I/O on {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Codec(#[from] CodecError),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RestoreError {
    let what = what.into();
    move |source| RestoreError::Io { what, source }
}

/// How to restore.
#[derive(Clone, Debug)]
pub struct RestoreRequest {
    pub data_dir: PathBuf,
    /// Member name of the restored one-member cluster.
    pub name: String,
    pub peer_url: String,
    /// Cluster token of the new cluster; never etcd's default.
    pub token: String,
    /// `etcdutl` (preferred, etcd ≥ 3.5).
    pub etcdutl: Option<PathBuf>,
    /// `etcdctl` (used when there is no etcdutl).
    pub etcdctl: Option<PathBuf>,
    pub timeout: Duration,
    /// Move the revision far ahead and mark it compacted (when the tool
    /// can), so watchers never see revisions go backwards: every restore
    /// that serves clients; not a verification, which compares revisions
    /// and hashes with the snapshot's record.
    pub bump_revision: bool,
}

/// Checks etcd's trailing checksum of a snapshot file (read on a blocking
/// thread in 1 MiB reads; a read already under way runs to its end if the
/// caller gives up). Returns the file's size.
pub async fn verify_file(file: &Path) -> Result<u64, RestoreError> {
    let path = file.to_path_buf();
    tokio::task::spawn_blocking(move || check_trailing_hash(&path))
        .await
        .map_err(|e| RestoreError::Io {
            what: file.display().to_string(),
            source: std::io::Error::other(e),
        })?
}

fn check_trailing_hash(file: &Path) -> Result<u64, RestoreError> {
    use std::io::Read;
    let mut f = std::fs::File::open(file).map_err(io(file.display().to_string()))?;
    let mut check = TrailingHash::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(file.display().to_string())(e)),
        };
        size += n as u64;
        check.update(&buf[..n]);
    }
    if check.verify() {
        Ok(size)
    } else {
        Err(RestoreError::Corrupt {
            what: file.display().to_string(),
            why: "its trailing sha256 does not match its content (truncated, damaged, or not an etcd snapshot)".into(),
        })
    }
}

/// Downloads a stored snapshot to `dest`, checking the sha256 recorded at
/// upload on the way (over the stored bytes) and undoing its compression
/// and encryption (`crate::codec`, as its metadata records; an encrypted
/// one needs `identities`). A mismatch or a failure deletes the partial
/// download; the file is etcd's snapshot as taken (its trailing checksum
/// is checked by the restore).
pub async fn fetch_verified(
    store: &dyn ObjectStore,
    name: &str,
    dest: &Path,
    identities: Option<&Identities>,
) -> Result<ObjectInfo, RestoreError> {
    let (info, reader) = store.get(name).await?;
    if let Some(why) = super::listing::unreadable_format(&info.metadata) {
        return Err(RestoreError::Corrupt {
            what: name.into(),
            why,
        });
    }
    let layers = Layers::of(name, &info.metadata)?;
    // Refused before anything is downloaded.
    layers.identities(name, identities)?;
    // The whole database, secrets included: eco's user only.
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(dest)
        .map_err(io(dest.display().to_string()))?;
    let decoded = crate::codec::decode_to_file(name, reader, layers, identities, out).await;
    let decoded = match decoded {
        Ok(d) => d,
        Err(e) => {
            let _ = tokio::fs::remove_file(dest).await;
            return Err(e.into());
        }
    };
    if decoded.stored_sha256 != info.sha256 {
        let _ = tokio::fs::remove_file(dest).await;
        return Err(RestoreError::Corrupt {
            what: name.into(),
            why: format!(
                "its sha256 is {}, the store recorded {}",
                decoded.stored_sha256, info.sha256
            ),
        });
    }
    Ok(info)
}

/// Restores the snapshot file `file` (verified) per `req`. etcd's
/// trailing checksum is checked by the tool as it restores (etcdutl and
/// etcdctl refuse a file whose sum does not match unless told to skip it),
/// into the staging directory, renamed into place only after: a restore
/// takes the tool's time, not the tool's and a whole read of the file
/// more. When the tool fails, eco reads the sum itself, so a corrupt file
/// gets an error that says so rather than the tool's words.
pub async fn restore_file(file: &Path, req: &RestoreRequest) -> Result<(), RestoreError> {
    match stage(file, req, &[]).await {
        Ok(staged) => staged.put_in_place(req),
        Err(failed) => {
            verify_file(file).await?;
            Err(failed)
        }
    }
}

/// Restores a member's backend file (`member/snap/db` of a stopped
/// member's data directory) per `req`: a backend carries no snapshot
/// checksum, so the tool is told to skip it (`--skip-hash-check`). Used
/// only on a copy eco itself made of a stopped member's data.
pub async fn restore_backend(db: &Path, req: &RestoreRequest) -> Result<(), RestoreError> {
    stage(db, req, &["--skip-hash-check"])
        .await?
        .put_in_place(req)
}

/// The directory `data_dir` goes in (`.` for a bare relative name).
fn parent_of(data_dir: &Path) -> PathBuf {
    data_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// Restores `file` with the tool into a staging directory beside
/// `req.data_dir` (refused when the target exists and is not empty).
async fn stage(file: &Path, req: &RestoreRequest, flags: &[&str]) -> Result<Staged, RestoreError> {
    if std::fs::symlink_metadata(&req.data_dir).is_ok_and(|m| !m.is_dir()) {
        return Err(RestoreError::TargetNotADirectory(req.data_dir.clone()));
    }
    if let Ok(mut entries) = std::fs::read_dir(&req.data_dir) {
        if entries.next().is_some() {
            return Err(RestoreError::TargetNotEmpty(req.data_dir.clone()));
        }
        std::fs::remove_dir(&req.data_dir).map_err(io(req.data_dir.display().to_string()))?;
    }
    let parent = parent_of(&req.data_dir);
    std::fs::create_dir_all(&parent).map_err(io(parent.display().to_string()))?;
    let staging = PathBuf::from(format!(
        "{}.restoring-{:08x}",
        req.data_dir.display(),
        rand::random::<u32>()
    ));
    // Removed on every way out but the rename into place (a failure, the
    // timeout, the work dropped by a signal): the snapshot it is made
    // from remains, so it is never the only copy.
    let staged = Staged {
        path: staging.clone(),
        in_place: false,
    };

    let (tool, mut command) = match (&req.etcdutl, &req.etcdctl) {
        (Some(utl), _) => (utl.clone(), tokio::process::Command::new(utl)),
        (None, Some(ctl)) => {
            let mut c = tokio::process::Command::new(ctl);
            c.env("ETCDCTL_API", "3");
            (ctl.clone(), c)
        }
        (None, None) => return Err(RestoreError::NoTool),
    };
    let tool_name = tool.display().to_string();
    let extra = match req.bump_revision {
        true => revision_flags(&tool).await,
        false => Vec::new(),
    };
    command
        .arg("snapshot")
        .arg("restore")
        .arg(file)
        .arg(format!("--data-dir={}", staging.display()))
        .arg(format!("--name={}", req.name))
        .arg(format!("--initial-cluster={}={}", req.name, req.peer_url))
        .arg(format!("--initial-advertise-peer-urls={}", req.peer_url))
        .arg(format!("--initial-cluster-token={}", req.token))
        .args(extra)
        .args(flags)
        .kill_on_drop(true);
    let output = tokio::time::timeout(req.timeout, command.output())
        .await
        .map_err(|_| RestoreError::Timeout {
            tool: tool_name.clone(),
            timeout: req.timeout,
        })?
        .map_err(io(tool_name.clone()))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).to_string();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        return Err(RestoreError::Tool {
            tool: tool_name,
            output: text.trim().to_string(),
        });
    }
    Ok(staged)
}

/// A restore's staging directory, removed when dropped unless it was
/// renamed into place.
struct Staged {
    path: PathBuf,
    in_place: bool,
}

impl Staged {
    /// Renames the staging directory to `req.data_dir` and syncs their
    /// directory.
    fn put_in_place(mut self, req: &RestoreRequest) -> Result<(), RestoreError> {
        std::fs::rename(&self.path, &req.data_dir)
            .map_err(io(req.data_dir.display().to_string()))?;
        self.in_place = true;
        let parent = parent_of(&req.data_dir);
        crate::base::atomic_file::sync_dir(&parent).map_err(io(parent.display().to_string()))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.in_place {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `--bump-revision` and `--mark-compacted` when the tool supports them, so
/// watchers never see revisions go backwards after a restore.
async fn revision_flags(tool: &Path) -> Vec<String> {
    let help = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::process::Command::new(tool)
            .args(["snapshot", "restore", "--help"])
            .env("ETCDCTL_API", "3")
            .kill_on_drop(true)
            .output(),
    )
    .await;
    let text = match help {
        Ok(Ok(o)) => format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        _ => return Vec::new(),
    };
    if text.contains("--bump-revision") && text.contains("--mark-compacted") {
        vec![
            "--bump-revision=1000000000".into(),
            "--mark-compacted".into(),
        ]
    } else {
        Vec::new()
    }
}
