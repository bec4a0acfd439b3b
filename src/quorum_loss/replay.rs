//! Replaying a stopped member's WAL up to its commit index (DESIGN §7,
//! seeding step 7): etcd is started with `--force-new-cluster` on a
//! **copy** of the data directory, listening on `127.0.0.1` ports nobody
//! else knows, so entries committed but not yet applied to the backend are
//! applied and kept, and no old member can reach it. The caller snapshots
//! it ([`Replayed::endpoint`]) and then [`Replayed::finish`]es it; the
//! original data directory is never touched.
//!
//! The command line comes from [`crate::etcd::flags::replay_args`]; the
//! client from [`EtcdAccess`].
//!
//! What it does not do: restore anything, or decide whether to replay.

use crate::etcd::access::EtcdAccess;
use crate::etcd::flags::{self, ReplaySpec};
use crate::etcd::probe::{self, MemberStatus};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("replay I/O on {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("etcd replaying {dir} exited early ({status}); see {log}")]
    Exited {
        dir: PathBuf,
        status: String,
        log: PathBuf,
    },
    #[error("etcd replaying {dir} had no leader within {limit:?}; see {log}")]
    NoLeader {
        dir: PathBuf,
        limit: Duration,
        log: PathBuf,
    },
    #[error(
        "the replayed WAL reached raft index {got}, below the commit index {want} it reported: refusing to seed from it"
    )]
    ShortOfCommit { got: u64, want: u64 },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ReplayError {
    let what = what.into();
    move |source| ReplayError::Io { what, source }
}

/// What to replay.
#[derive(Clone, Debug)]
pub struct ReplayRequest {
    pub etcd: PathBuf,
    /// The stopped member's data directory (read only).
    pub data_dir: PathBuf,
    /// Where the copy goes (replaced if a previous attempt left one).
    pub scratch: PathBuf,
    /// The member's name (its instance id).
    pub name: String,
    /// The commit index the member reported: the replay must reach it.
    pub commit_index: u64,
    /// Bound of the wait for the replayed member to lead.
    pub limit: Duration,
    /// How the replayed member is reached (the timeout of each call; with
    /// client TLS, verifying this instance's name: see
    /// [`EtcdAccess::verifying_as`]).
    pub access: EtcdAccess,
    /// The client surface's TLS, served by the replayed member too.
    pub client_tls: Option<crate::config::SurfaceTls>,
}

/// A running replay.
pub struct Replayed {
    child: tokio::process::Child,
    endpoint: String,
    scratch: PathBuf,
    pub status: MemberStatus,
}

impl Replayed {
    /// Client URL of the replayed member (127.0.0.1 only).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Stops the replayed member and removes the copy (it is a copy; the
    /// original data directory is untouched).
    pub async fn finish(mut self) -> Result<(), ReplayError> {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        remove_scratch(&self.scratch).await
    }
}

async fn remove_scratch(scratch: &Path) -> Result<(), ReplayError> {
    match tokio::fs::remove_dir_all(scratch).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(scratch.display().to_string())(e)),
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A loopback port free right now.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Copies the data directory, starts etcd on the copy with
/// `--force-new-cluster`, and waits until it leads with the WAL applied.
pub async fn start(req: &ReplayRequest) -> Result<Replayed, ReplayError> {
    remove_scratch(&req.scratch).await?;
    let (from, to) = (req.data_dir.clone(), req.scratch.clone());
    tokio::task::spawn_blocking(move || copy_dir(&from, &to))
        .await
        .map_err(|e| io("copying the data directory")(std::io::Error::other(e)))?
        .map_err(io(format!(
            "copying {} to {}",
            req.data_dir.display(),
            req.scratch.display()
        )))?;
    let spec = ReplaySpec {
        name: req.name.clone(),
        data_dir: req.scratch.clone(),
        client_port: free_port().map_err(io("a free loopback port"))?,
        peer_port: free_port().map_err(io("a free loopback port"))?,
        client_tls: req.client_tls.clone(),
    };
    let client = spec.client_url();
    let log = req.scratch.with_extension("log");
    let log_file = std::fs::File::create(&log).map_err(io(log.display().to_string()))?;
    let log_err = log_file
        .try_clone()
        .map_err(io(log.display().to_string()))?;
    let mut child = tokio::process::Command::new(&req.etcd)
        .args(flags::replay_args(&spec))
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(log_err))
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(io(req.etcd.display().to_string()))?;
    let started = Instant::now();
    let status = loop {
        if let Ok(Some(exit)) = child.try_wait() {
            return Err(ReplayError::Exited {
                dir: req.scratch.clone(),
                status: exit.to_string(),
                log,
            });
        }
        if started.elapsed() > req.limit {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(ReplayError::NoLeader {
                dir: req.scratch.clone(),
                limit: req.limit,
                log,
            });
        }
        if let Ok(mut c) = req.access.connect_for_status(&client).await {
            if let Ok(s) = probe::status(&mut c, &client, req.access.call_timeout()).await {
                // Applied up to the last entry (servers too old to report
                // the applied index say 0: leading is all they tell).
                let applied = s.raft_applied_index >= s.raft_index || s.raft_applied_index == 0;
                if s.has_leader() && applied {
                    break s;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let replayed = Replayed {
        child,
        endpoint: client,
        scratch: req.scratch.clone(),
        status,
    };
    if replayed.status.raft_index < req.commit_index {
        let got = replayed.status.raft_index;
        replayed.finish().await?;
        return Err(ReplayError::ShortOfCommit {
            got,
            want: req.commit_index,
        });
    }
    Ok(replayed)
}
