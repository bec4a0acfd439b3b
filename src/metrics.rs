//! Prometheus metrics of one instance. The registry is per instance (not
//! global) so several instances can share a process in tests.

use crate::status::InstanceStatus;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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
    etcd_starts: Counter,
    etcd_crashes: Counter,
    seen_starts: AtomicU64,
    seen_crashes: AtomicU64,
}

impl Metrics {
    pub fn new(instance: &str, etcd_version: &str) -> Self {
        let mut registry = Registry::with_prefix("eco");
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: crate::version::VERSION.into(),
                commit: crate::version::GIT_COMMIT.into(),
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
            etcd_starts: Counter::default(),
            etcd_crashes: Counter::default(),
            seen_starts: AtomicU64::new(0),
            seen_crashes: AtomicU64::new(0),
            registry: Mutex::new(Registry::default()),
        };
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
            "etcd_starts",
            "Starts of the etcd process, restarts included",
            m.etcd_starts.clone(),
        );
        registry.register(
            "etcd_crashes",
            "Exits of etcd that eco did not ask for",
            m.etcd_crashes.clone(),
        );
        if let Ok(mut r) = m.registry.lock() {
            *r = registry;
        }
        m
    }

    pub fn observe(&self, s: &InstanceStatus) {
        self.etcd_running.set(s.process.running as i64);
        self.etcd_ready.set(s.ready as i64);
        let member = s.member.as_ref();
        self.etcd_is_leader
            .set(member.map(|m| m.is_leader() as i64).unwrap_or(0));
        self.etcd_revision
            .set(member.map(|m| m.revision).unwrap_or(0));
        self.etcd_db_size
            .set(member.map(|m| m.db_size).unwrap_or(0));
        let advance = |counter: &Counter, seen: &AtomicU64, now: u64| {
            let before = seen.swap(now, Ordering::Relaxed);
            if now > before {
                counter.inc_by(now - before);
            }
        };
        advance(&self.etcd_starts, &self.seen_starts, s.process.starts);
        advance(&self.etcd_crashes, &self.seen_crashes, s.process.crashes);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Ok(r) = self.registry.lock() {
            if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &r) {
                tracing::warn!(error = %e, "cannot encode metrics");
            }
        }
        out
    }
}
