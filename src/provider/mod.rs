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
//! Every provider answers what one read says, or an error. What eco acts
//! on is [`confirmed`]'s view of those reads, which [`from_config`] wraps
//! around every provider: the last good group is kept when a read fails
//! or lists no instance at all, and an instance counts as departed — out
//! of the group, certified gone — only once consecutive reads over a span
//! derived from the refresh interval say so (`recovery::departures`).
//!
//! The static provider (`static_file.rs`) reads a file; the AWS provider
//! (`aws/`) reads an EC2 auto-scaling group through IMDSv2 and the Auto
//! Scaling and EC2 APIs, and announces the termination lifecycle hook
//! ([`Provider::termination`]); the StatefulSet provider (`statefulset.rs`)
//! names a pod's peers by the stable DNS names of every ordinal below the
//! desired size, from the pod's environment and the config alone.

mod aws;
mod confirmed;
mod group;
mod statefulset;
mod static_file;

pub use group::{Group, Host, Identity, Instance, check_instance_id};
pub use recovery::asg::Standing;
pub use statefulset::{PodEnvironment, parse_replicas};
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
    #[error("cannot read the replicas file {path}: {source}")]
    ReadReplicas {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("replicas file {path}: {message}")]
    MalformedReplicas {
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
    /// The instance metadata service did not answer (or not as expected).
    #[error("the instance metadata service: {0}")]
    Metadata(String),
    /// An AWS API call failed (after the SDK's retries).
    #[error("AWS {call}: {message}")]
    Aws { call: &'static str, message: String },
    /// The provider's answers do not make a complete group: the last
    /// complete one stays.
    #[error("the group is incomplete: {0}")]
    Incomplete(String),
    /// A group without a single instance: refused, the last good one
    /// stays.
    #[error(transparent)]
    ListsNoInstance(#[from] recovery::departures::ListsNoInstance),
}

/// The provider announces that this instance is being terminated and
/// waits for it (an EC2 termination lifecycle hook in `Terminating:Wait`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TerminationNotice {
    /// What said so (`lifecycle state Terminating:Wait`).
    pub source: String,
    /// The hook that waits for eco; `None` when nothing waits (no hook is
    /// configured: the instance leaves by the normal departed path).
    pub hook: Option<TerminationHook>,
}

/// A lifecycle hook holding this instance until eco completes it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TerminationHook {
    pub group: String,
    pub name: String,
    /// The group continues by itself (the hook's default result) when no
    /// heartbeat arrives for this long.
    pub heartbeat_timeout_ms: u64,
    /// The most the hook waits, heartbeats or not.
    pub global_timeout_ms: Option<u64>,
}

/// Source of the group of instances. Dyn-safe; every future is `Send`.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// This instance, as resolved when the provider was built.
    fn identity(&self) -> &Identity;

    /// The current group. A provider that cannot answer completely returns
    /// an error, never a partial group nor an older answer (keeping the
    /// last good group is [`confirmed`]'s).
    async fn discover(&self) -> Result<Group, ProviderError>;

    /// Of `ids`, the instances the provider certifies gone. Positive
    /// evidence only: an id it cannot vouch for either way is not in the
    /// answer.
    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError>;

    /// Why the last `discover` answered something other than what the
    /// provider last read (a failed or refused read, a departure not
    /// confirmed yet), for `/status`; `None` when it is the same.
    fn problem(&self) -> Option<String> {
        None
    }

    /// Whether an instance the group does not list has certainly departed:
    /// false while eco has not read the group over the confirmation span
    /// since it started (nothing tells it who was listed before), and the
    /// planner then keeps the members no instance of the group owns.
    fn absences_confirmed(&self) -> bool {
        true
    }

    /// The termination of this instance the provider announced, as of the
    /// last `discover`; `None` for providers without one.
    fn termination(&self) -> Option<TerminationNotice> {
        None
    }

    /// Tells the hook eco is still working on the leave.
    async fn termination_heartbeat(&self, _hook: &TerminationHook) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Lets the group continue the termination (`CONTINUE`).
    async fn complete_termination(&self, _hook: &TerminationHook) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Asks for this instance to be replaced (`recovery::self_replacement`
    /// decided it): what the provider did. Providers that cannot replace
    /// instances say so, and eco logs the request for a human.
    async fn request_replacement(&self, _reason: &str) -> Result<Replacement, ProviderError> {
        Ok(Replacement::NotSupported(
            "this provider cannot replace instances: replace this instance by hand (a new, empty disk joins by itself)".into(),
        ))
    }

    /// How often the group should be read again.
    fn refresh_interval(&self) -> std::time::Duration;
}

/// What a provider did with a replacement request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// The provider will replace the instance (AWS: marked unhealthy).
    Requested(String),
    /// It cannot; what a human should do instead.
    NotSupported(String),
}

/// The provider the config names, for this instance: `instance_id` is the
/// id given on the command line or in `ECO_INSTANCE_ID`, if any (a provider
/// may also find it itself).
pub async fn from_config(
    config: &Config,
    instance_id: Option<&str>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let read = reading(config, instance_id).await?;
    Ok(Arc::new(confirmed::Confirmed::new(read)))
}

/// The provider the config names, answering its reads as they are.
async fn reading(
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
                config.provider.refresh_interval().get(),
            )?))
        }
        ProviderKind::Statefulset => {
            let s = config.provider.statefulset.as_ref().ok_or_else(|| {
                ProviderError::NotConfigured(
                    "provider.statefulset is required for provider.kind = \"statefulset\"".into(),
                )
            })?;
            let env = PodEnvironment::read(instance_id);
            Ok(Arc::new(statefulset::StatefulSetProvider::open(
                s,
                &env,
                config.provider.refresh_interval().get(),
            )?))
        }
        ProviderKind::Aws => {
            let defaults;
            let aws = match &config.provider.aws {
                Some(a) => a,
                None => {
                    defaults = crate::config::AwsProviderConfig::default();
                    &defaults
                }
            };
            let provider =
                aws::AwsProvider::connect(aws, config.provider.refresh_interval().get()).await?;
            // The metadata service names this instance; an id given too must
            // be the same (a config copied to the wrong machine).
            if let Some(id) = instance_id.map(str::trim).filter(|s| !s.is_empty())
                && id != provider.identity().id
            {
                return Err(ProviderError::BadInstanceId(format!(
                    "{id:?} was given, but the instance metadata service says this is {:?}",
                    provider.identity().id
                )));
            }
            Ok(Arc::new(provider))
        }
    }
}
