//! Providers tell an instance who it is, which instances form its group,
//! and which instances are certainly gone.
//!
//! One dyn-safe trait, [`Provider`] (held as `Arc<dyn Provider>`, every
//! future `Send`), built by one factory, [`from_config`]. Nothing outside
//! this module names a concrete provider. It answers three questions:
//!
//! - [`Provider::identity`]: this instance's id, the [`Host`] peers reach
//!   it at (an IP address or a DNS name) and the address it binds;
//! - [`Provider::discover`]: the group — desired size, instances with zone;
//! - [`Provider::departed`]: of some instance ids, those the provider
//!   **certifies gone** (positive evidence only: an instance removed from
//!   the static group file; later a terminated EC2 instance). A missing
//!   row, a failed page, a throttled call or a name that does not resolve
//!   is *unknown*, never departed — gone is what lets quorum-loss recovery
//!   stop waiting for a member that may hold the only copy of acknowledged
//!   writes.
//!
//! The static provider (`static_file.rs`) reads a file; cloud providers
//! (AWS auto-scaling groups, Kubernetes StatefulSets) plug in behind the
//! same trait.

mod group;
mod static_file;

pub use group::{Group, Host, Identity, Instance, check_instance_id};
pub use static_file::parse_group_file;

use crate::config::{Config, ProviderKind};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Why the group could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("cannot read group file {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("group file {path}: {message}")]
    Malformed {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("instance {id:?} is not in the group file {path}; the group lists: {listed}")]
    SelfNotInGroup {
        id: String,
        path: std::path::PathBuf,
        listed: String,
    },
    #[error(
        "no instance id: pass --instance-id, set ECO_INSTANCE_ID, or set provider.static.instance_id in the config"
    )]
    NoInstanceId,
    /// From `--instance-id`, `ECO_INSTANCE_ID` or the config.
    #[error("the instance id: {0}")]
    BadInstanceId(String),
    #[error("the provider is not configured: {0}")]
    NotConfigured(String),
}

/// Source of the group of instances. Dyn-safe; every future is `Send`.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// This instance, as resolved when the provider was built.
    fn identity(&self) -> &Identity;

    /// The current group. A provider that cannot answer completely returns
    /// an error or its last complete answer (and says which in its docs),
    /// never a partial group.
    async fn discover(&self) -> Result<Group, ProviderError>;

    /// Of `ids`, the instances the provider certifies gone. Positive
    /// evidence only: an id it cannot vouch for either way is not in the
    /// answer.
    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError>;
}

/// The provider the config names, for this instance: `instance_id` is the
/// id given on the command line or in `ECO_INSTANCE_ID`, if any (a provider
/// may also find it itself).
pub async fn from_config(
    config: &Config,
    instance_id: Option<&str>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    match config.provider.kind {
        ProviderKind::Static => {
            let s = config.provider.static_group.as_ref().ok_or_else(|| {
                ProviderError::NotConfigured(
                    "provider.static is required for provider.kind = \"static\"".into(),
                )
            })?;
            let id = instance_id
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .or_else(|| s.instance_id.clone())
                .ok_or(ProviderError::NoInstanceId)?;
            check_instance_id(&id).map_err(ProviderError::BadInstanceId)?;
            Ok(Arc::new(static_file::StaticProvider::open(
                s.group_file.clone(),
                id,
            )?))
        }
    }
}
