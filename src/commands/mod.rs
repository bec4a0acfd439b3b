//! Implementations of the one-shot CLI commands (`eco snapshot`, `eco
//! restore`, and what `eco status --config` needs). `main.rs` parses
//! arguments and calls these. They reach the provider and the store
//! through the same factories as the daemon.

pub mod restore;
pub mod snapshot;

use crate::config::Config;
use crate::provider::Identity;
use crate::store::ObjectStore;
use std::sync::Arc;

/// The store the config names, or an error saying how to configure one.
pub fn store(config: &Config) -> anyhow::Result<Arc<dyn ObjectStore>> {
    crate::store::from_config(config)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no snapshot store is configured: set snapshot.store = \"dir\" and [snapshot.dir] path"
        )
    })
}

/// This instance as the config's provider knows it (`instance_id`: from
/// the command line or `ECO_INSTANCE_ID`, if given).
pub async fn identity(config: &Config, instance_id: Option<&str>) -> anyhow::Result<Identity> {
    let provider = crate::provider::from_config(config, instance_id).await?;
    Ok(provider.identity().clone())
}
