//! What this instance is and what it talks to, fixed at start: the
//! configuration, its identity and etcd URLs, the etcd binaries, how it
//! reaches etcd members, the store (measured), the provider, the
//! quorum-loss protocol's timings, and the instance's metrics.

use crate::config::Config;
use crate::etcd::access::EtcdAccess;
use crate::etcd::binaries::RunningBinaries;
use crate::etcd::flags;
use crate::provider::{Host, Identity, Provider};
use crate::store::ObjectStore;
use recovery::fenced::ProtocolConfig;
use std::sync::Arc;

pub(super) struct Ctx {
    pub config: Config,
    pub me: Identity,
    /// Where eco reaches its own etcd (its scheme follows the listener);
    /// this instance's peer URL as the config wants it.
    pub client_url: crate::etcd::local_endpoint::LocalEndpoint,
    pub peer_url: String,
    /// The binaries the local member runs on (an upgrade step changes them).
    pub binaries: RunningBinaries,
    pub access: EtcdAccess,
    pub store: Option<Arc<dyn ObjectStore>>,
    pub provider: Arc<dyn Provider>,
    /// The quorum-loss protocol's timings (also the one freshness of peer
    /// facts formation reads).
    pub protocol: ProtocolConfig,
    /// The instance's metrics: what is counted where it happens
    /// (decisions, snapshots, store calls) is counted through it.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Compression and encryption of snapshots and segments (the config's
    /// `[snapshot]`, resolved).
    pub codec: crate::snapshot::codec_choice::SnapshotCodec,
}

impl Ctx {
    pub fn cluster(&self) -> &str {
        &self.config.cluster.name
    }

    pub fn id(&self) -> &str {
        &self.me.id
    }

    /// The store, or why `what` cannot be done without one.
    pub fn store_for(&self, what: &str) -> anyhow::Result<&dyn ObjectStore> {
        self.store.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "{what} needs the snapshot store (snapshot.store), which is not configured"
            )
        })
    }

    pub fn client_url_of(&self, host: &Host) -> String {
        flags::client_url(&self.config.etcd, host)
    }

    pub fn peer_url_of(&self, host: &Host) -> String {
        flags::peer_url(&self.config.etcd, host)
    }

    /// Which moved-aside data directories are kept.
    pub fn moved_aside_retention(&self) -> recovery::moved_aside::Retention {
        recovery::moved_aside::Retention {
            keep: self.config.etcd.keep_moved_aside as usize,
            min_age_ms: self.config.etcd.keep_moved_aside_for.millis(),
        }
    }
}
