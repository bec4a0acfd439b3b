//! Implementations of the one-shot CLI commands (`eco snapshot`, `eco
//! restore`, and what `eco status --config` needs). `main.rs` parses
//! arguments and calls these. They reach the provider and the store
//! through the same factories as the daemon.

pub mod certs;
pub mod config_check;
pub mod restore;
pub mod snapshot;

use crate::config::Config;
use crate::provider::Identity;
use crate::store::ObjectStore;
use std::sync::Arc;

/// The store the config names, or an error saying how to configure one.
pub async fn store(config: &Config) -> anyhow::Result<Arc<dyn ObjectStore>> {
    crate::store::from_config(config).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "no snapshot store is configured: set snapshot.store = \"dir\" with [snapshot.dir] path, or \"s3\" with [snapshot.s3] bucket"
        )
    })
}

/// Where the instance of this config serves its API: `api.bind`, else its
/// address from the provider, else — an instance the provider no longer
/// names (it left its group) — the address its daemon recorded.
pub async fn api_address(
    config: &Config,
    instance_id: Option<&str>,
) -> anyhow::Result<std::net::SocketAddr> {
    if let Some(bind) = config.api.bind {
        return Ok(bind);
    }
    match identity(config, instance_id).await {
        Ok(me) => Ok(std::net::SocketAddr::new(me.bind, config.api.port as u16)),
        Err(e) => crate::api_address::recorded(&config.etcd.data_dir).ok_or_else(|| {
            e.context(format!(
                "and no daemon recorded its API address in {}",
                crate::api_address::file(&config.etcd.data_dir).display()
            ))
        }),
    }
}

/// This instance as the config's provider knows it (`instance_id`: from
/// the command line or `ECO_INSTANCE_ID`, if given).
pub async fn identity(config: &Config, instance_id: Option<&str>) -> anyhow::Result<Identity> {
    let provider = crate::provider::from_config(config, instance_id).await?;
    Ok(provider.identity().clone())
}
