//! A restore to a point in the archive: the plan's snapshot (the newest at
//! or before the point whose chain reaches it: `recovery::archive::
//! plan_restore`) is fetched (its sha256 checked) and restored, revision
//! kept, into a throwaway one-member etcd on 127.0.0.1; the chain's
//! segments are replayed into it in revision order, **one transaction per
//! source revision**, so every replayed revision keeps its number (each
//! transaction's revision is checked: a gap or a divergence stops the
//! restore); then a snapshot of the throwaway etcd is written to a file,
//! etcd's trailing sha256 checked, for `eco restore` or the seeding to
//! restore as any snapshot is (the revision bumped).
//!
//! What a replay cannot carry, and says: a key put with a lease after the
//! snapshot is replayed without it (the grant is not in the watch stream);
//! [`Replayed::leases_dropped`] counts the keys that end without the lease
//! they had. Auth and membership are the snapshot's.
//!
//! The throwaway etcd's directory is removed whatever happens; the store
//! is only read.

use super::listing;
use super::segment::{self, Change};
use crate::etcd::access::EtcdAccess;
use crate::etcd::binaries::EtcdBinaries;
use crate::snapshot::verify::{self, HashAt, Throwaway, WorkDir};
use crate::store::ObjectStore;
use etcd_client::{Txn, TxnOp};
use recovery::archive::{Point, RestorePlan};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;

use super::segment::MAX_SEGMENT_OBJECT;

/// What to replay, with what.
pub struct ReplayRequest<'a> {
    pub store: &'a dyn ObjectStore,
    pub cluster: &'a str,
    pub binaries: &'a EtcdBinaries,
    /// eco's access (the credentials of `[auth]` for a snapshot that
    /// holds etcd's authentication); the throwaway member is plain text.
    pub access: &'a EtcdAccess,
    /// Where the throwaway member's directory is made.
    pub work_in: &'a Path,
    /// Bounds the snapshot's restore and the throwaway member's start.
    pub timeout: Duration,
    /// What opens encrypted snapshots and segments
    /// (`snapshot.encryption.identity_file`).
    pub identities: Option<&'a crate::codec::Identities>,
}

/// A point restored into a snapshot file.
#[derive(Debug)]
pub struct Replayed {
    pub plan: RestorePlan,
    /// The snapshot file at the point (in the request's `work_in`),
    /// removed when this is dropped.
    pub file: tempfile::TempPath,
    /// The revision the file holds.
    pub revision: i64,
    /// Revisions replayed from segments.
    pub revisions: u64,
    /// Keys that end without the lease they had at the source.
    pub leases_dropped: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("listing the archive: {0}")]
    Listing(#[from] crate::store::StoreError),
    #[error(transparent)]
    NoPlan(#[from] recovery::archive::NoPlan),
    #[error("segment {name}: {why}")]
    Segment { name: String, why: String },
    #[error("{0}")]
    Throwaway(String),
    #[error("the replay stopped at revision {at}: {why}")]
    Diverged { at: i64, why: String },
}

/// Plans and replays `point` into a snapshot file.
pub async fn replay(req: &ReplayRequest<'_>, point: Point) -> Result<Replayed, ReplayError> {
    let found = listing::list(req.store, req.cluster).await?;
    let plan = recovery::archive::plan_restore(&found.snapshots, &found.segments, point)?;
    replay_plan(req, &plan).await
}

/// Replays `plan` into a snapshot file.
pub async fn replay_plan(
    req: &ReplayRequest<'_>,
    plan: &RestorePlan,
) -> Result<Replayed, ReplayError> {
    let dir = work_dir(req)?;
    let base = dir.path().join("base.db");
    crate::snapshot::restore::fetch_verified(req.store, &plan.snapshot.name, &base, req.identities)
        .await
        .map_err(|e| ReplayError::Throwaway(e.to_string()))?;
    replay_onto(req, plan, &dir, &base, true).await
}

/// Replays `plan` into a snapshot file, its snapshot being the local
/// snapshot file `base` (left as it is): the seeding's WAL replay, which
/// never went through the store.
pub async fn replay_plan_on(
    req: &ReplayRequest<'_>,
    plan: &RestorePlan,
    base: &Path,
) -> Result<Replayed, ReplayError> {
    let dir = work_dir(req)?;
    replay_onto(req, plan, &dir, base, false).await
}

fn work_dir(req: &ReplayRequest<'_>) -> Result<WorkDir, ReplayError> {
    WorkDir::make(req.work_in).map_err(|e| {
        ReplayError::Throwaway(format!(
            "cannot make a temporary directory in {}: {e}",
            req.work_in.display()
        ))
    })
}

/// The throwaway member restored from `base` in `dir`, the plan's segments
/// replayed into it, its snapshot written; `base` removed once restored
/// when `remove_base`.
async fn replay_onto(
    req: &ReplayRequest<'_>,
    plan: &RestorePlan,
    dir: &WorkDir,
    base: &Path,
    remove_base: bool,
) -> Result<Replayed, ReplayError> {
    let plan = plan.clone();
    let t = Throwaway {
        binaries: req.binaries,
        access: req.access,
        timeout: req.timeout,
    };
    let (mut etcd, url) = verify::launch(&t, base, dir.path())
        .await
        .map_err(ReplayError::Throwaway)?;
    if remove_base {
        let _ = std::fs::remove_file(base);
    }
    let result = async {
        let restored = verify::ask(&t, &url, HashAt::Nothing, dir.path(), &mut etcd)
            .await
            .map_err(ReplayError::Throwaway)?;
        let mut client = req
            .access
            .connect(&url)
            .await
            .map_err(|e| ReplayError::Throwaway(e.to_string()))?;
        let (revision, revisions, leases_dropped) =
            replay_segments(req, &plan, &mut client, restored.revision).await?;
        // The point as a snapshot file beside the work directory (it
        // outlives the throwaway member's directory).
        // Removed when dropped: on an error here, or once the caller is
        // done with it (or stopped).
        let path = req
            .work_in
            .join(format!(".eco-point-{:08x}.db", rand::random::<u32>()));
        let file = tempfile::TempPath::try_from_path(&path)
            .map_err(|e| ReplayError::Throwaway(format!("{}: {e}", path.display())))?;
        save_snapshot(&mut client, &file, req.access.call_timeout()).await?;
        Ok(Replayed {
            plan: plan.clone(),
            file,
            revision,
            revisions,
            leases_dropped,
        })
    }
    .await;
    let _ = etcd.kill().await;
    result
}

/// Replays the plan's segments after `from` (the restored revision);
/// returns the revision reached, the revisions replayed and the keys left
/// without their lease.
async fn replay_segments(
    req: &ReplayRequest<'_>,
    plan: &RestorePlan,
    client: &mut etcd_client::Client,
    from: i64,
) -> Result<(i64, u64, u64), ReplayError> {
    let timeout = req.access.call_timeout();
    let mut current = from;
    let mut replayed = 0u64;
    let mut leased: HashSet<Vec<u8>> = HashSet::new();
    'segments: for entry in &plan.segments {
        let body = read_segment(req.store, &entry.name, req.identities).await?;
        let bad = |why: String| ReplayError::Segment {
            name: entry.name.clone(),
            why,
        };
        if body.cluster != req.cluster || body.incarnation != entry.incarnation {
            return Err(bad(format!(
                "it holds cluster {:?} incarnation {}, its name says {:?} incarnation {}",
                body.cluster, body.incarnation, req.cluster, entry.incarnation
            )));
        }
        for rev in body.revisions {
            if rev.revision <= current {
                continue;
            }
            if !plan.until.includes(rev.revision, rev.seen_unix_ms) {
                break 'segments;
            }
            if rev.revision != current + 1 {
                return Err(ReplayError::Diverged {
                    at: current,
                    why: format!("the next revision archived is {} (a gap)", rev.revision),
                });
            }
            let ops: Vec<TxnOp> = rev
                .changes
                .iter()
                .map(|c| match c {
                    Change::Put { key, value, lease } => {
                        if *lease != 0 {
                            leased.insert(key.clone());
                        } else {
                            leased.remove(key);
                        }
                        TxnOp::put(key.clone(), value.clone(), None)
                    }
                    Change::Delete { key } => {
                        leased.remove(key);
                        TxnOp::delete(key.clone(), None)
                    }
                })
                .collect();
            let answered = tokio::time::timeout(timeout, client.txn(Txn::new().and_then(ops)))
                .await
                .map_err(|_| ReplayError::Diverged {
                    at: current,
                    why: format!("the throwaway etcd did not answer within {timeout:?}"),
                })?
                .map_err(|e| ReplayError::Diverged {
                    at: current,
                    why: e.to_string(),
                })?;
            let got = answered.header().map(|h| h.revision()).unwrap_or(0);
            if got != rev.revision {
                return Err(ReplayError::Diverged {
                    at: current,
                    why: format!(
                        "source revision {} became revision {got} (a lease of the snapshot expired during the replay, or the segments do not continue it)",
                        rev.revision
                    ),
                });
            }
            current = rev.revision;
            replayed += 1;
        }
    }
    if let recovery::archive::Until::Revision(r) = plan.until {
        if plan.exact && current > r {
            return Err(ReplayError::Diverged {
                at: current,
                why: format!(
                    "snapshot {} holds revisions past {r} (its recorded revision is a lower bound: etcd 3.4 does not say a snapshot's own); restore an earlier point or a later one",
                    plan.snapshot.name
                ),
            });
        }
        if current < r {
            return Err(ReplayError::Diverged {
                at: current,
                why: format!("the segments end before revision {r}"),
            });
        }
    }
    Ok((current, replayed, leased.len() as u64))
}

/// Reads and decodes one segment, its sha256 checked against the store's
/// record of it and its own.
async fn read_segment(
    store: &dyn ObjectStore,
    name: &str,
    identities: Option<&crate::codec::Identities>,
) -> Result<segment::SegmentBody, ReplayError> {
    let bad = |why: String| ReplayError::Segment {
        name: name.to_string(),
        why,
    };
    let (info, reader) = store.get(name).await.map_err(|e| bad(e.to_string()))?;
    if info.size > MAX_SEGMENT_OBJECT {
        return Err(bad(format!(
            "{} bytes, more than a segment eco writes",
            info.size
        )));
    }
    let mut bytes = Vec::with_capacity(info.size as usize);
    reader
        .take(MAX_SEGMENT_OBJECT + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| bad(e.to_string()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    if !info.sha256.is_empty() && sha256 != info.sha256 {
        return Err(bad(format!(
            "its content hashes to {sha256}, the store recorded {}",
            info.sha256
        )));
    }
    // The object's layers as its metadata records them (age when the
    // cluster encrypts; never an outer compression: a segment compresses
    // its own content, as its magic says), undone first.
    let layers = crate::codec::Layers::of(name, &info.metadata).map_err(|e| bad(e.to_string()))?;
    let identities = layers
        .identities(name, identities)
        .map_err(|e| bad(e.to_string()))?
        .cloned();
    let name = name.to_string();
    tokio::task::spawn_blocking(move || {
        let plain = crate::codec::decode_bytes(
            &name,
            &bytes,
            layers,
            identities.as_ref(),
            MAX_SEGMENT_OBJECT,
        )
        .map_err(|e| e.to_string())?;
        segment::decode(&plain).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| bad(e.to_string()))?
    .map_err(bad)
}

/// Streams a snapshot of the throwaway member into `file`, etcd's trailing
/// sha256 checked.
async fn save_snapshot(
    client: &mut etcd_client::Client,
    file: &Path,
    timeout: Duration,
) -> Result<(), ReplayError> {
    crate::snapshot::to_file::save(client, file, timeout)
        .await
        .map(|_| ())
        .map_err(|e| ReplayError::Throwaway(format!("the snapshot of the replayed data: {e}")))
}
