//! Replaying a stopped member's WAL up to its commit index (the `ReplayWal`
//! step of `recovery::seeding`): etcd is started with `--force-new-cluster`
//! on a **copy** of the data directory, listening on `127.0.0.1` ports
//! nobody else knows, so entries committed but not yet applied to the
//! backend are applied and kept, and no old member can reach it. The caller
//! snapshots it ([`Replayed::endpoint`]) and then [`Replayed::finish`]es
//! it; the original data directory is never touched.
//!
//! A **learner's** WAL cannot be replayed that way: etcd refuses
//! `--force-new-cluster` on it ("removed all voters": the only member it
//! would keep does not vote). Its copy is instead restarted as it was
//! ([`ReplayMode::FromBackend`]): with no peer reachable it applies its WAL
//! up to the commit index by itself (how far it got is read from its
//! metrics listener, `etcd_server_proposals_applied_total`; it never serves
//! clients without a leader), is stopped cleanly, and its backend is
//! restored into a one-member cluster on loopback (`--skip-hash-check`: a
//! backend has no snapshot checksum), which leads and is handed to the
//! caller like any replay.
//!
//! The command lines come from [`crate::etcd::flags::replay_args`] and
//! [`crate::etcd::flags::apply_args`]; the client from [`EtcdAccess`].
//!
//! What it does not do: decide whether to replay, or which way (the
//! seeding plan says: `recovery::seeding`).

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
    #[error(
        "the learner's copy in {dir} applied its WAL to index {got} within {limit:?}, below the commit index {want} it reported; see {log}"
    )]
    NotApplied {
        dir: PathBuf,
        got: u64,
        want: u64,
        limit: Duration,
        log: PathBuf,
    },
    #[error("restoring the learner's backend: {0}")]
    Restore(#[from] crate::snapshot::restore::RestoreError),
}

/// How a member's WAL is replayed (`recovery::seeding` chooses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// A voter's: etcd with `--force-new-cluster` on the copy.
    ForceNewCluster,
    /// A learner's: the copy restarted as it was applies its WAL, and its
    /// backend seeds a one-member cluster (module docs).
    FromBackend,
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
    pub mode: ReplayMode,
    /// The restore tools ([`ReplayMode::FromBackend`]).
    pub etcdutl: Option<PathBuf>,
    pub etcdctl: Option<PathBuf>,
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

/// Copies the data directory and replays it per `req.mode`; the replayed
/// member leads with the WAL applied when this returns.
pub async fn start(req: &ReplayRequest) -> Result<Replayed, ReplayError> {
    copy_to_scratch(req).await?;
    if req.mode == ReplayMode::ForceNewCluster {
        return force_new_cluster(req, req.commit_index).await;
    }
    let applied = apply_in_place(req).await?;
    // The backend of the stopped copy, restored into a second copy: a
    // one-member cluster that leads at once.
    let restored = req.scratch.with_extension("restored");
    remove_scratch(&restored).await?;
    let db = req.scratch.join("member").join("snap").join("db");
    crate::snapshot::restore::restore_backend(
        &db,
        &crate::snapshot::restore::RestoreRequest {
            data_dir: restored.clone(),
            name: req.name.clone(),
            peer_url: format!(
                "http://127.0.0.1:{}",
                free_port().map_err(io("a free loopback port"))?
            ),
            token: format!("replay-of-{}", req.name),
            etcdutl: req.etcdutl.clone(),
            etcdctl: req.etcdctl.clone(),
            timeout: req.limit,
            bump_revision: false,
        },
    )
    .await?;
    remove_scratch(&req.scratch).await?;
    tokio::fs::rename(&restored, &req.scratch)
        .await
        .map_err(io(restored.display().to_string()))?;
    tracing::info!(
        applied,
        "the learner's WAL applied in place; its backend restored on loopback"
    );
    // The restored member starts again at a small raft index: what was
    // applied was checked above.
    force_new_cluster(req, 0).await
}

/// Copies the member's data directory to the scratch directory.
async fn copy_to_scratch(req: &ReplayRequest) -> Result<(), ReplayError> {
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
    Ok(())
}

/// The copy restarted as it was, with a metrics listener: waits until it
/// applied up to the reported commit index, then stops it cleanly (its
/// backend then holds what it applied). The applied index reached.
async fn apply_in_place(req: &ReplayRequest) -> Result<u64, ReplayError> {
    let spec = ReplaySpec {
        name: req.name.clone(),
        data_dir: req.scratch.clone(),
        client_port: free_port().map_err(io("a free loopback port"))?,
        peer_port: free_port().map_err(io("a free loopback port"))?,
        client_tls: None,
    };
    let metrics_port = free_port().map_err(io("a free loopback port"))?;
    let log = req.scratch.with_extension("apply.log");
    let mut child = spawn_logged(&req.etcd, &flags::apply_args(&spec, metrics_port), &log)?;
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let started = Instant::now();
    let mut applied = 0;
    let reached = loop {
        if let Ok(Some(exit)) = child.try_wait() {
            return Err(ReplayError::Exited {
                dir: req.scratch.clone(),
                status: exit.to_string(),
                log,
            });
        }
        if let Some(a) = applied_index(&url, req.access.call_timeout()).await {
            applied = a;
            if a >= req.commit_index {
                break true;
            }
        }
        if started.elapsed() > req.limit {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    stop_gracefully(&mut child).await;
    if !reached {
        return Err(ReplayError::NotApplied {
            dir: req.scratch.clone(),
            got: applied,
            want: req.commit_index,
            limit: req.limit,
            log,
        });
    }
    Ok(applied)
}

/// `etcd_server_proposals_applied_total` from an etcd metrics listener.
async fn applied_index(url: &str, timeout: Duration) -> Option<u64> {
    let text = crate::etcd::metrics_text::fetch(url, timeout).await.ok()?;
    crate::etcd::metrics_text::gauge(&text, "etcd_server_proposals_applied_total").map(|v| v as u64)
}

/// SIGTERM, then SIGKILL after 10 s.
async fn stop_gracefully(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// etcd with `args`, its output to `log`, in its own process group.
fn spawn_logged(
    etcd: &Path,
    args: &[String],
    log: &Path,
) -> Result<tokio::process::Child, ReplayError> {
    let log_file = std::fs::File::create(log).map_err(io(log.display().to_string()))?;
    let log_err = log_file
        .try_clone()
        .map_err(io(log.display().to_string()))?;
    let mut command = tokio::process::Command::new(etcd);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(log_err))
        .kill_on_drop(true)
        .process_group(0);
    crate::etcd::supervisor::withhold_from_etcd(&mut command);
    command.spawn().map_err(io(etcd.display().to_string()))
}

/// etcd with `--force-new-cluster` on the scratch copy; waits until it
/// leads with its WAL applied, and refuses a raft index below
/// `commit_index`.
async fn force_new_cluster(
    req: &ReplayRequest,
    commit_index: u64,
) -> Result<Replayed, ReplayError> {
    let spec = ReplaySpec {
        name: req.name.clone(),
        data_dir: req.scratch.clone(),
        client_port: free_port().map_err(io("a free loopback port"))?,
        peer_port: free_port().map_err(io("a free loopback port"))?,
        client_tls: req.client_tls.clone(),
    };
    let client = spec.client_url();
    let log = req.scratch.with_extension("log");
    let mut child = spawn_logged(&req.etcd, &flags::replay_args(&spec), &log)?;
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
        if let Ok(mut c) = req.access.connect_for_status(&client).await
            && let Ok(s) = probe::status(&mut c, &client, req.access.call_timeout()).await
        {
            // Applied up to the last entry (servers too old to report
            // the applied index say 0: leading is all they tell).
            let applied = s.raft_applied_index >= s.raft_index || s.raft_applied_index == 0;
            if s.has_leader() && applied {
                break s;
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
    if replayed.status.raft_index < commit_index {
        let got = replayed.status.raft_index;
        replayed.finish().await?;
        return Err(ReplayError::ShortOfCommit {
            got,
            want: commit_index,
        });
    }
    Ok(replayed)
}
