//! What incarnation 1 is seeded from (`startup::initial_source` decides):
//! `recovery.bootstrap_from`, else the newest snapshot the store holds for
//! this cluster, else nothing. The chosen snapshot is restored (sha256
//! verified) into the empty data directory under the new token after the
//! record is created and before etcd starts; a restore already done (a
//! crash after it) is not repeated.

use super::Daemon;
use crate::data_dir::{self, DataDirContents};
use crate::fencing::facts;
use crate::snapshot::name::SnapshotName;
use crate::startup::{self, InitialSource};
use crate::store::{ObjectStore, list_all};
use anyhow::Context;

impl Daemon {
    pub(super) async fn initial_source(&self) -> anyhow::Result<InitialSource> {
        let Some(store) = &self.store else {
            return Ok(InitialSource::Empty);
        };
        let cluster = &self.config.cluster.name;
        let objects = list_all(store, &SnapshotName::prefix(cluster))
            .await
            .context("listing the store's snapshots before seeding")?;
        let newest = facts::newest_snapshot(&objects).map(|s| s.name);
        let configured = self.config.recovery.bootstrap_from.as_deref();
        let source = startup::initial_source(configured, newest.as_deref());
        if let (InitialSource::Snapshot { name, .. }, Some(_)) = (&source, configured) {
            if store.head(name).await?.is_none() {
                anyhow::bail!(
                    "recovery.bootstrap_from names {name}, which the store does not hold (see `eco snapshot list`)"
                );
            }
        }
        Ok(source)
    }

    pub(super) async fn restore_initial(
        &self,
        source: &InitialSource,
        token: &str,
    ) -> anyhow::Result<()> {
        let InitialSource::Snapshot { name, reason } = source else {
            return Ok(());
        };
        if data_dir::inspect(&self.data_dir)? == DataDirContents::EtcdData {
            return Ok(());
        }
        let store = self.store.as_ref().context("restoring needs the store")?;
        tracing::warn!(snapshot = %name, %reason, "seeding incarnation 1 from a snapshot");
        self.restore_here(store, name, token, "seed-1.db").await
    }
}
