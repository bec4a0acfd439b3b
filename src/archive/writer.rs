//! The archive's writer: on the instance that writes snapshots (the etcd
//! leader's), one watch on the whole key space from the revision after
//! the newest point the archive reaches (`recovery::archive::resume`),
//! cut into segments every `archive.interval` or `archive.max_segment_bytes`
//! (`recovery::archive::cut_due`), each stored before the next is cut.
//! When the watch cannot continue — no snapshot of this incarnation, or
//! etcd compacted the revisions it needs — a full snapshot is taken at once
//! and starts a new chain. It stops when this instance stops writing
//! snapshots (its successor resumes from what the store holds), and
//! stores what it holds when eco stops.
//!
//! It reads the typed facts of the daemon's pass (the snapshot writer's
//! [`WriterInput`]), never `/status`; it writes its own part of `/status`.

use super::listing;
use super::name::SegmentName;
use super::segment::{self, Change, RevisionChanges, SegmentBody};
use crate::api::status::{ArchiveStatus, InstanceStatus};
use crate::base::events::Event;
use crate::base::wall_clock::unix_ms;
use crate::etcd::access::EtcdAccess;
use crate::metrics::archive::{ArchiveFailure, ArchiveMetrics};
use crate::snapshot::writer::{ChainSnapshot, WriterInput};
use crate::store::ObjectStore;
use etcd_client::{EventType, WatchOptions};
use recovery::archive::{self, Resume};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

pub struct ArchiveWriter {
    pub store: Arc<dyn ObjectStore>,
    pub access: EtcdAccess,
    pub cluster: String,
    pub instance: String,
    pub endpoint: crate::etcd::local_endpoint::LocalEndpoint,
    /// A segment is cut when its oldest change waited this long…
    pub interval: Duration,
    /// …or when it holds this many bytes of changes.
    pub max_segment_bytes: u64,
    /// zstd's level.
    pub level: i32,
    /// Encryption of segments (`crate::snapshot::codec_choice`: never
    /// compression, a segment compresses its content).
    pub encoding: crate::codec::Encoding,
    pub metrics: ArchiveMetrics,
    /// Where the full snapshot a new chain starts with is asked for (the
    /// snapshot writer takes it: one instance, one taker).
    pub chain_snapshots: mpsc::Sender<ChainSnapshot>,
}

/// How long a writer with no snapshot of its incarnation waits for the
/// snapshot writer's own first one before asking for one (a fresh cluster
/// gets one snapshot, not two).
const FIRST_SNAPSHOT_GRACE: Duration = Duration::from_secs(10);

/// How one watch ended.
enum Ended {
    Stopped,
    /// This instance no longer writes, or writes for another incarnation.
    Handed,
    /// etcd compacted the revisions the archive needs: a new chain.
    Compacted {
        compact_revision: i64,
    },
    Failed(ArchiveFailure, String),
}

/// What the writer knows and did (projected to `/status`).
#[derive(Default)]
struct State {
    writing: bool,
    archived: Option<i64>,
    archived_seen_unix_ms: Option<u64>,
    chain: Option<String>,
    segments: u64,
    failures: u64,
    last_error: Option<String>,
    /// Changes received and not yet stored.
    held: Vec<RevisionChanges>,
    held_bytes: u64,
    held_since: Option<Instant>,
    /// Since when the archive is behind the revision the pass reported.
    behind_since: Option<Instant>,
    /// How long the last segment took to store.
    last_upload: Duration,
    /// The next chain must start with a new snapshot (the watch was
    /// compacted away): no grace.
    forced: bool,
}

impl State {
    fn lag(&mut self, known_revision: i64) -> (Duration, i64) {
        let archived = self.archived.unwrap_or(0);
        let behind = self.writing && known_revision > archived;
        match (behind, self.behind_since) {
            (true, None) => self.behind_since = Some(Instant::now()),
            (false, _) => self.behind_since = None,
            _ => {}
        }
        let seconds = self
            .behind_since
            .map(|t| t.elapsed())
            .unwrap_or_default()
            .max(self.held_since.map(|t| t.elapsed()).unwrap_or_default());
        let revisions = if self.writing {
            (known_revision - archived).max(0)
        } else {
            0
        };
        (seconds, revisions)
    }

    fn project(&self, lag: Duration, lag_revisions: i64) -> ArchiveStatus {
        ArchiveStatus {
            writing: self.writing,
            newest_revision: self.archived,
            newest_seen_unix_ms: self.archived_seen_unix_ms,
            lag_ms: u64::try_from(lag.as_millis()).unwrap_or(u64::MAX),
            lag_revisions,
            chain: self.chain.clone(),
            segments: self.segments,
            failures: self.failures,
            last_error: self.last_error.clone(),
        }
    }
}

/// How often a following writer refreshes its part of `/status` and its
/// lag metrics (a stored segment refreshes them at once).
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The longest wait between two attempts after a failure.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl ArchiveWriter {
    /// Runs until `stop` turns true; what it holds then is stored.
    pub async fn run(
        self,
        mut input: watch::Receiver<WriterInput>,
        status: watch::Sender<InstanceStatus>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut s = State::default();
        let mut backoff = Duration::from_secs(1);
        let mut new_chain: Option<String> = None;
        loop {
            if *stop.borrow() {
                return;
            }
            let current = input.borrow().clone();
            s.writing = current.facts.writes() && current.naming.is_some();
            self.publish(&mut s, &status, current.facts.revision());
            let Some((incarnation, token)) = current.naming.clone().filter(|_| s.writing) else {
                tokio::select! {
                    _ = stop.wait_for(|v| *v) => return,
                    changed = input.changed() => {
                        // The daemon dropped its side: it is stopping.
                        if changed.is_err() {
                            return;
                        }
                    }
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                continue;
            };
            let ended = self
                .follow(
                    incarnation,
                    &token,
                    new_chain.take(),
                    &mut input,
                    &mut stop,
                    &mut s,
                    &status,
                )
                .await;
            match ended {
                Ended::Stopped => return,
                Ended::Handed => {
                    backoff = Duration::from_secs(1);
                }
                Ended::Compacted { compact_revision } => {
                    s.forced = true;
                    new_chain = Some(format!(
                        "etcd compacted its history to revision {compact_revision}, past the revision after the archive's newest ({})",
                        s.archived.unwrap_or(0)
                    ));
                }
                Ended::Failed(failure, error) => {
                    s.failures += 1;
                    s.last_error = Some(error.clone());
                    self.metrics.failed(failure);
                    crate::event!(warn, Event::ArchiveFailed, failure = failure.as_str(), %error, "the change archive failed; retrying");
                    self.publish(&mut s, &status, current.facts.revision());
                    tokio::select! {
                        _ = stop.wait_for(|v| *v) => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn publish(&self, s: &mut State, status: &watch::Sender<InstanceStatus>, known_revision: i64) {
        let (lag, revisions) = s.lag(known_revision);
        self.metrics.lag(lag.as_secs_f64(), revisions);
        if let Some(r) = s.archived.filter(|_| s.writing) {
            self.metrics.archived(r);
        }
        let projected = s.project(lag, revisions);
        status.send_modify(|st| st.archive = Some(projected));
    }

    /// Where to watch from: the revision after the archive's newest point,
    /// or after a full snapshot the snapshot writer takes now when the
    /// archive cannot continue. With no snapshot of the incarnation yet,
    /// the snapshot writer's own first one (due at once) is waited for a
    /// little ([`FIRST_SNAPSHOT_GRACE`]) before one is asked for.
    async fn start_point(
        &self,
        incarnation: u64,
        forced: Option<String>,
        stop: &mut watch::Receiver<bool>,
        s: &mut State,
    ) -> Result<i64, Ended> {
        let list = || async {
            let found = listing::list(&*self.store, &self.cluster)
                .await
                .map_err(|e| {
                    Ended::Failed(ArchiveFailure::Listing, format!("listing the archive: {e}"))
                })?;
            Ok::<_, Ended>(archive::resume(
                &found.snapshots,
                &found.segments,
                incarnation,
            ))
        };
        let mut resume = match forced {
            Some(reason) => Resume::NewChain { reason },
            None => list().await?,
        };
        if matches!(resume, Resume::NewChain { .. }) && !s.forced {
            // Only the snapshots are listed while waiting (the segments,
            // an info read each on S3, once one is there).
            let until = Instant::now() + FIRST_SNAPSHOT_GRACE;
            while Instant::now() < until {
                tokio::select! {
                    _ = async { stop.wait_for(|v| *v).await.is_ok() } => return Err(Ended::Stopped),
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                let snapshots = crate::snapshot::listing::list(&*self.store, &self.cluster)
                    .await
                    .map_err(|e| {
                        Ended::Failed(
                            ArchiveFailure::Listing,
                            format!("listing the snapshots: {e}"),
                        )
                    })?;
                let arrived = snapshots
                    .snapshots
                    .iter()
                    .filter_map(listing::snapshot_point)
                    .any(|p| p.incarnation == incarnation);
                if arrived {
                    resume = list().await?;
                    break;
                }
            }
        }
        s.forced = false;
        match resume {
            Resume::From { revision, reason } => {
                crate::event!(info, Event::ArchiveResumed, incarnation, from_revision = revision, %reason, "archiving etcd's changes");
                s.chain = Some(reason);
                Ok(revision)
            }
            Resume::NewChain { reason } => {
                let (reply, answer) = oneshot::channel();
                let asked = ChainSnapshot {
                    reason: format!("the change archive starts a new chain: {reason}"),
                    reply,
                };
                let failed = |why: String| {
                    Ended::Failed(
                        ArchiveFailure::Snapshot,
                        format!("the snapshot a new chain starts with: {why}"),
                    )
                };
                self.chain_snapshots
                    .send(asked)
                    .await
                    .map_err(|_| failed("the snapshot writer is not running".into()))?;
                let taken = tokio::select! {
                    _ = async { stop.wait_for(|v| *v).await.is_ok() } => return Err(Ended::Stopped),
                    taken = answer => taken.map_err(|_| failed("the snapshot writer did not answer".into()))?.map_err(failed)?,
                };
                self.metrics.chain_started();
                crate::event!(info, Event::ArchiveChainStarted, snapshot = %taken.0, revision = taken.1, %reason, "the change archive started a new chain");
                s.chain = Some(format!("a new chain from snapshot {} ({reason})", taken.0));
                Ok(taken.1.saturating_add(1))
            }
        }
    }

    /// One watch, from the archive's newest point until this instance
    /// stops writing, eco stops, or the watch cannot go on.
    #[allow(clippy::too_many_arguments)]
    async fn follow(
        &self,
        incarnation: u64,
        token: &str,
        forced: Option<String>,
        input: &mut watch::Receiver<WriterInput>,
        stop: &mut watch::Receiver<bool>,
        s: &mut State,
        status: &watch::Sender<InstanceStatus>,
    ) -> Ended {
        let format = input.borrow().format;
        let from = match self.start_point(incarnation, forced, stop, s).await {
            Ok(r) => r,
            Err(ended) => return ended,
        };
        s.archived = Some(from - 1);
        s.held.clear();
        s.held_bytes = 0;
        s.held_since = None;
        let timeout = self.access.call_timeout();
        let endpoint = self.endpoint.get();
        let mut client = match self.access.connect(&endpoint).await {
            Ok(c) => c,
            Err(e) => {
                return Ended::Failed(
                    ArchiveFailure::Watch,
                    format!("connecting to {endpoint}: {e}"),
                );
            }
        };
        let options = WatchOptions::new()
            .with_all_keys()
            .with_start_revision(from);
        let mut stream = match tokio::time::timeout(timeout, client.watch("", Some(options))).await
        {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => {
                return Ended::Failed(
                    ArchiveFailure::Watch,
                    format!("watching from revision {from}: {e}"),
                );
            }
            Err(_) => {
                return Ended::Failed(
                    ArchiveFailure::Watch,
                    format!("no watch within {timeout:?}"),
                );
            }
        };
        let tick_every =
            (self.interval / 10).clamp(Duration::from_millis(20), Duration::from_secs(1));
        let mut tick = tokio::time::interval(tick_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let ident = (incarnation, token.to_string());
        let mut last_published = Instant::now();
        let mut published_segments = s.segments;
        loop {
            tokio::select! {
                _ = async { stop.wait_for(|v| *v).await.is_ok() } => {
                    let _ = self.store_held(&ident, format, s).await;
                    return Ended::Stopped;
                }
                changed = input.changed() => {
                    let current = input.borrow().clone();
                    let still = changed.is_ok()
                        && current.facts.writes()
                        && current.naming.as_ref() == Some(&ident);
                    if !still {
                        let _ = self.store_held(&ident, format, s).await;
                        return Ended::Handed;
                    }
                }
                _ = tick.tick() => {}
                message = stream.message() => {
                    let response = match message {
                        Ok(Some(r)) => r,
                        Ok(None) => return Ended::Failed(ArchiveFailure::Watch, "the watch ended".into()),
                        Err(e) => return Ended::Failed(ArchiveFailure::Watch, format!("the watch broke: {e}")),
                    };
                    if response.canceled() {
                        if response.compact_revision() > 0 {
                            let _ = self.store_held(&ident, format, s).await;
                            return Ended::Compacted { compact_revision: response.compact_revision() };
                        }
                        return Ended::Failed(ArchiveFailure::Watch, format!("etcd canceled the watch: {}", response.cancel_reason()));
                    }
                    hold(s, response.events());
                }
            }
            let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
            let due = archive::cut_due(
                s.held_bytes,
                s.held_since.map(|t| ms(t.elapsed())),
                ms(self.interval),
                self.max_segment_bytes,
                ms(tick_every).saturating_add(ms(s.last_upload)),
            );
            if due && let Err(failed) = self.store_held(&ident, format, s).await {
                // Held changes stay held and are tried again at the next
                // tick, or the watch restarts from the archive's newest
                // point (etcd still has them).
                let (e, lost) = match failed {
                    HeldNotStored::Retry(e) => (e, false),
                    HeldNotStored::Lost(e) => (e, true),
                };
                match archive::after_store_failure(s.held_bytes, self.max_segment_bytes, lost) {
                    archive::AfterStoreFailure::KeepHolding => {}
                    archive::AfterStoreFailure::RestartWatch => {
                        return Ended::Failed(ArchiveFailure::Store, e);
                    }
                }
                s.failures += 1;
                s.last_error = Some(e.clone());
                self.metrics.failed(ArchiveFailure::Store);
                crate::event!(warn, Event::ArchiveFailed, failure = ArchiveFailure::Store.as_str(), error = %e, "a segment could not be stored; retrying");
            }
            // `/status` and the metrics once a second, or when a segment
            // was stored (not at every check).
            if last_published.elapsed() >= PUBLISH_EVERY || s.segments != published_segments {
                let known = input.borrow().facts.revision();
                self.publish(s, status, known);
                last_published = Instant::now();
                published_segments = s.segments;
            }
        }
    }

    /// Stores what is held as one segment (nothing held: nothing done).
    async fn store_held(
        &self,
        (incarnation, token): &(u64, String),
        format: recovery::cluster_version::Format,
        s: &mut State,
    ) -> Result<(), HeldNotStored> {
        let (Some(first), Some(last)) = (s.held.first(), s.held.last()) else {
            return Ok(());
        };
        let name = SegmentName {
            cluster: self.cluster.clone(),
            incarnation: *incarnation,
            first: first.revision,
            last: last.revision,
            token: token.clone(),
        };
        let changes: usize = s.held.iter().map(|r| r.changes.len()).sum();
        let metadata = BTreeMap::from([
            (listing::meta::CLUSTER.to_string(), self.cluster.clone()),
            (
                listing::meta::INCARNATION.to_string(),
                incarnation.to_string(),
            ),
            (listing::meta::TOKEN.to_string(), token.clone()),
            (listing::meta::FIRST.to_string(), name.first.to_string()),
            (listing::meta::LAST.to_string(), name.last.to_string()),
            (
                listing::meta::FIRST_SEEN_UNIX_MS.to_string(),
                first.seen_unix_ms.to_string(),
            ),
            (
                listing::meta::LAST_SEEN_UNIX_MS.to_string(),
                last.seen_unix_ms.to_string(),
            ),
            (listing::meta::CHANGES.to_string(), changes.to_string()),
            (listing::meta::INSTANCE.to_string(), self.instance.clone()),
            (
                listing::meta::FORMAT.to_string(),
                format.max(recovery::cluster_version::UNTAGGED).to_string(),
            ),
        ]);
        let mut metadata = metadata;
        if self.encoding.encryption.is_some() {
            metadata.insert(
                crate::codec::meta::ENCRYPTION.into(),
                crate::codec::meta::AGE.into(),
            );
        }
        let last_seen = last.seen_unix_ms;
        let body = SegmentBody {
            cluster: self.cluster.clone(),
            incarnation: *incarnation,
            token: token.clone(),
            first: name.first,
            last: name.last,
            revisions: std::mem::take(&mut s.held),
        };
        let level = self.level;
        let sealing = self.encoding.clone();
        // The body comes back whatever the encoding's outcome: its changes
        // stay held for the next attempt.
        let encoded = tokio::task::spawn_blocking(move || {
            let bytes = segment::encode(&body, level)
                .map_err(|e| e.to_string())
                .and_then(|bytes| match sealing.encryption {
                    Some(_) => {
                        crate::codec::encode_bytes(&bytes, &sealing).map_err(|e| e.to_string())
                    }
                    None => Ok(bytes),
                });
            (bytes, body)
        })
        .await;
        let (bytes, body) = match encoded {
            Ok((Ok(bytes), body)) => (bytes, body),
            Ok((Err(e), body)) => {
                s.held = body.revisions;
                return Err(HeldNotStored::Retry(format!(
                    "encoding segment {name}: {e}"
                )));
            }
            // The encoding thread panicked and took the changes with it:
            // the watch restarts from the archive's newest point.
            Err(e) => {
                return Err(HeldNotStored::Lost(format!("encoding segment {name}: {e}")));
            }
        };
        let started = Instant::now();
        let limit = self.access.call_timeout() * 4;
        let put = tokio::time::timeout(
            limit,
            self.store
                .put(&name.to_string(), &mut bytes.as_slice(), metadata),
        )
        .await;
        match put {
            Ok(Ok(info)) => {
                s.last_upload = started.elapsed();
                self.metrics.stored(info.size, s.last_upload, name.last);
                s.segments += 1;
                s.archived = Some(name.last);
                s.archived_seen_unix_ms = Some(last_seen);
                s.held_bytes = 0;
                s.held_since = None;
                s.last_error = None;
                Ok(())
            }
            failed => {
                // Keep the changes for the next attempt.
                s.held = body.revisions;
                Err(HeldNotStored::Retry(match failed {
                    Ok(Err(e)) => format!("storing segment {name}: {e}"),
                    _ => format!("storing segment {name}: no answer within {limit:?}"),
                }))
            }
        }
    }
}

/// Why what was held is not in the store yet.
enum HeldNotStored {
    /// Still held: tried again at the next tick.
    Retry(String),
    /// No longer held (the encoding thread panicked with them).
    Lost(String),
}

/// Adds a watch response's events to what is held, by revision (etcd never
/// splits a revision's events across responses).
fn hold(s: &mut State, events: &[etcd_client::Event]) {
    let seen = unix_ms();
    for event in events {
        let Some(kv) = event.kv() else { continue };
        let revision = kv.mod_revision();
        let change = match event.event_type() {
            EventType::Put => Change::Put {
                key: kv.key().to_vec(),
                value: kv.value().to_vec(),
                lease: kv.lease(),
            },
            EventType::Delete => Change::Delete {
                key: kv.key().to_vec(),
            },
        };
        s.held_bytes += change.weight();
        match s.held.last_mut() {
            Some(r) if r.revision == revision => r.changes.push(change),
            _ => s.held.push(RevisionChanges {
                revision,
                seen_unix_ms: seen,
                changes: vec![change],
            }),
        }
        if s.held_since.is_none() {
            s.held_since = Some(Instant::now());
        }
    }
}
