//! Prometheus metrics of one instance. The registry is per instance (not
//! global) so several instances can share a process in tests. Values are
//! brought up to date at every scrape: from the status projection, and
//! from the gossip node's counters once it runs ([`Metrics::watch_gossip`]).
//! The etcd process, the build and gossip are here; what the instance sees
//! of its cluster and decided is in [`cluster`].

pub mod archive;
mod cluster;
pub mod decisions;
pub mod snapshots;
pub mod text_format;

use crate::api::status::InstanceStatus;
use gossip::GossipMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    commit: String,
    etcd_version: String,
    instance: String,
}

pub struct Metrics {
    registry: Mutex<Registry>,
    etcd_running: Gauge,
    etcd_ready: Gauge,
    etcd_is_leader: Gauge,
    etcd_revision: Gauge,
    etcd_db_size: Gauge,
    etcd_uptime: Gauge,
    etcd_starts: Counter,
    etcd_crashes: Counter,
    seen_starts: AtomicU64,
    seen_crashes: AtomicU64,
    recovery_messages_dropped: Counter,
    seen_dropped: AtomicU64,
    cluster_format_writing: Gauge,
    cluster_format_finalized: Gauge,
    gossip: Mutex<Option<GossipExport>>,
    cluster: cluster::ClusterMetrics,
    /// Counted where eco acts: the daemon, the quorum-loss driver and the
    /// seeding executor hold clones.
    pub decisions: decisions::DecisionMetrics,
    /// Counted by the snapshot writer.
    pub snapshots: snapshots::SnapshotMetrics,
    /// Counted by the change archive's writer.
    pub archive: archive::ArchiveMetrics,
    /// Recorded by the store wrapper (`store::measured`).
    pub store: crate::store::metrics::StoreMetrics,
}

/// Reads one of the gossip node's counters.
type ReadCounter = fn(&GossipMetrics) -> &AtomicU64;

/// The gossip node's counters and their exported copies.
struct GossipExport {
    source: Arc<GossipMetrics>,
    counters: Vec<(Counter, AtomicU64, ReadCounter)>,
    members_up: Gauge,
}

/// Brings `counter` up to `now`, remembering `now` in `seen`.
fn advance(counter: &Counter, seen: &AtomicU64, now: u64) {
    let before = seen.swap(now, Ordering::Relaxed);
    if now > before {
        counter.inc_by(now - before);
    }
}

impl Metrics {
    pub fn new(instance: &str, etcd_version: &str) -> Self {
        let mut registry = Registry::with_prefix("eco");
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: crate::base::version::VERSION.into(),
                commit: crate::base::version::GIT_COMMIT.into(),
                etcd_version: etcd_version.into(),
                instance: instance.into(),
            })
            .set(1);
        registry.register("build_info", "Build of eco and the etcd it runs", build);
        let m = Self {
            etcd_running: Gauge::default(),
            etcd_ready: Gauge::default(),
            etcd_is_leader: Gauge::default(),
            etcd_revision: Gauge::default(),
            etcd_db_size: Gauge::default(),
            etcd_uptime: Gauge::default(),
            etcd_starts: Counter::default(),
            etcd_crashes: Counter::default(),
            seen_starts: AtomicU64::new(0),
            seen_crashes: AtomicU64::new(0),
            recovery_messages_dropped: Counter::default(),
            seen_dropped: AtomicU64::new(0),
            cluster_format_writing: Gauge::default(),
            cluster_format_finalized: Gauge::default(),
            registry: Mutex::new(Registry::default()),
            gossip: Mutex::new(None),
            cluster: cluster::ClusterMetrics::default(),
            decisions: decisions::DecisionMetrics::default(),
            snapshots: snapshots::SnapshotMetrics::default(),
            archive: archive::ArchiveMetrics::default(),
            store: crate::store::metrics::StoreMetrics::default(),
        };
        m.cluster.register(&mut registry);
        m.decisions.register(&mut registry);
        m.snapshots.register(&mut registry);
        m.archive.register(&mut registry);
        m.store.register(&mut registry);
        registry.register(
            "cluster_format_writing",
            "The format of eco's shared data this instance writes (the cluster version; the previous release's until the cluster is finalized)",
            m.cluster_format_writing.clone(),
        );
        registry.register(
            "cluster_format_finalized",
            "The newest format the cluster was finalized at (1 before any finalization)",
            m.cluster_format_finalized.clone(),
        );
        registry.register(
            "etcd_running",
            "1 when the etcd process runs",
            m.etcd_running.clone(),
        );
        registry.register(
            "etcd_ready",
            "1 when etcd runs and knows a leader",
            m.etcd_ready.clone(),
        );
        registry.register(
            "etcd_is_leader",
            "1 when the local member is the raft leader",
            m.etcd_is_leader.clone(),
        );
        registry.register(
            "etcd_revision",
            "Revision reported by the local member",
            m.etcd_revision.clone(),
        );
        registry.register(
            "etcd_db_size_bytes",
            "Backend size reported by the local member",
            m.etcd_db_size.clone(),
        );
        registry.register(
            "etcd_uptime_seconds",
            "Seconds since the running etcd process started (0 while it does not run)",
            m.etcd_uptime.clone(),
        );
        registry.register(
            "etcd_starts",
            "Starts of the etcd process, restarts included",
            m.etcd_starts.clone(),
        );
        registry.register(
            "etcd_crashes",
            "Exits of etcd that eco did not ask for",
            m.etcd_crashes.clone(),
        );
        registry.register(
            "recovery_messages_dropped",
            "Quorum-loss protocol messages dropped: their sender is neither an instance of the group nor a voting member",
            m.recovery_messages_dropped.clone(),
        );
        if let Ok(mut r) = m.registry.lock() {
            *r = registry;
        }
        m
    }

    pub fn observe(&self, s: &InstanceStatus) {
        self.cluster.observe(s);
        self.decisions.refresh();
        self.etcd_running.set(s.process.running as i64);
        self.etcd_ready.set(s.ready as i64);
        let member = s.member.as_ref();
        self.etcd_is_leader
            .set(member.map(|m| m.is_leader() as i64).unwrap_or(0));
        self.etcd_revision
            .set(member.map(|m| m.revision).unwrap_or(0));
        self.etcd_db_size
            .set(member.map(|m| m.db_size).unwrap_or(0));
        self.etcd_uptime
            .set(s.process.started_unix_ms.map_or(0, |at| {
                (crate::base::wall_clock::unix_ms().saturating_sub(at) / 1000) as i64
            }));
        advance(&self.etcd_starts, &self.seen_starts, s.process.starts);
        advance(&self.etcd_crashes, &self.seen_crashes, s.process.crashes);
        if let Some(r) = &s.recovery {
            advance(
                &self.recovery_messages_dropped,
                &self.seen_dropped,
                r.dropped_messages,
            );
        }
        if let Ok(g) = self.gossip.lock()
            && let Some(g) = g.as_ref()
        {
            for (counter, seen, read) in &g.counters {
                advance(counter, seen, GossipMetrics::get(read(&g.source)));
            }
            g.members_up
                .set(GossipMetrics::get(&g.source.members_up) as i64);
        }
    }

    /// The cluster version as this pass assessed it.
    pub fn cluster_format(&self, writing: u16, finalized: u16) {
        self.cluster_format_writing.set(i64::from(writing));
        self.cluster_format_finalized.set(i64::from(finalized));
    }

    /// Exports the gossip node's counters from now on.
    pub fn watch_gossip(&self, source: Arc<GossipMetrics>) {
        let exported: [(&str, &str, ReadCounter); 10] = [
            ("gossip_datagrams_sent", "Gossip datagrams sent", |m| {
                &m.datagrams_sent
            }),
            (
                "gossip_datagrams_received",
                "Gossip datagrams received",
                |m| &m.datagrams_received,
            ),
            (
                "gossip_datagrams_rejected",
                "Gossip datagrams dropped: they did not open with any key or did not decode",
                |m| &m.datagrams_rejected,
            ),
            (
                "gossip_messages_rejected",
                "Gossip messages dropped: their claimed sender is not the member at the datagram's source address",
                |m| &m.messages_rejected,
            ),
            (
                "gossip_states_refused",
                "Published states refused (a version no honest instance can have) or refuted (a newer state of this instance published by another)",
                |m| &m.states_refused,
            ),
            (
                "gossip_states_undecodable",
                "Published states dropped because they did not decode",
                |m| &m.states_undecodable,
            ),
            (
                "gossip_states_future",
                "Published states dropped because they are written in a format this eco does not read (a later release's, after the cluster was finalized)",
                |m| &m.states_future,
            ),
            (
                "gossip_keyring_changes",
                "Gossip keyrings installed while running (gossip.key_file re-read with new keys)",
                |m| &m.keyring_changes,
            ),
            ("gossip_sent_bytes", "Bytes of gossip datagrams sent", |m| {
                &m.bytes_sent
            }),
            (
                "gossip_received_bytes",
                "Bytes of gossip datagrams received",
                |m| &m.bytes_received,
            ),
        ];
        let members_up = Gauge::default();
        let Ok(mut registry) = self.registry.lock() else {
            return;
        };
        let mut counters = Vec::new();
        for (name, help, read) in exported {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            counters.push((c, AtomicU64::new(0), read));
        }
        registry.register(
            "gossip_members_up",
            "Other instances gossip sees up (this one not counted)",
            members_up.clone(),
        );
        if let Ok(mut g) = self.gossip.lock() {
            *g = Some(GossipExport {
                source,
                counters,
                members_up,
            });
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Ok(r) = self.registry.lock()
            && let Err(e) = prometheus_client::encoding::text::encode(&mut out, &r)
        {
            tracing::warn!(error = %e, "cannot encode metrics");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status::InstanceStatus;

    pub(super) fn status() -> InstanceStatus {
        crate::api::status::example("a", "c")
    }

    #[test]
    fn gossip_counters_are_exported_at_every_scrape() {
        let m = Metrics::new("a", "3.5.1");
        let g = Arc::new(GossipMetrics::default());
        m.watch_gossip(g.clone());
        g.datagrams_rejected.fetch_add(3, Ordering::Relaxed);
        g.members_up.store(2, Ordering::Relaxed);
        m.observe(&status());
        let text = m.render();
        assert!(
            text.contains("eco_gossip_datagrams_rejected_total 3"),
            "{text}"
        );
        assert!(text.contains("eco_gossip_members_up 2"), "{text}");
        assert!(text.contains("eco_etcd_ready 1"), "{text}");
        g.datagrams_rejected.fetch_add(1, Ordering::Relaxed);
        m.observe(&status());
        assert!(m.render().contains("eco_gossip_datagrams_rejected_total 4"));
    }
}
