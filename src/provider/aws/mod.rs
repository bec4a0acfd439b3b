//! `provider.kind = "aws"`: the EC2 auto-scaling group this instance
//! belongs to.
//!
//! - **Identity** from the instance metadata service (IMDSv2,
//!   `identity.rs`): the EC2 instance id is the instance id, the private
//!   IPv4 address is where peers reach it and what it binds, the
//!   availability zone is its zone.
//! - **The group** (`api.rs`): `DescribeAutoScalingInstances` names it
//!   (unless `provider.aws.group_name` does); `DescribeAutoScalingGroups`
//!   gives the desired capacity and every instance with its lifecycle
//!   state and zone; `DescribeInstances` (every page, by ids) gives private
//!   addresses and EC2 states. Which instances count is the lifecycle table
//!   of `recovery::asg`. Any failed call, or rows that do not make a
//!   complete group, is an error: eco's confirmed view (`confirmed.rs`)
//!   keeps the last complete group and says so in `/status`.
//! - **Departed** only on positive evidence: EC2 state `shutting-down` or
//!   `terminated`, or `InvalidInstanceID.NotFound` for an id eco knew.
//! - **Termination**: when this instance's lifecycle state is
//!   `Terminating*` (or the metadata service's target lifecycle state is
//!   `Terminated`), [`Provider::termination`] announces it, with the
//!   group's termination hook when it has one; the daemon leaves and then
//!   completes the hook (`CONTINUE`), heartbeating while it works.
//!
//! What it does not do: change the group (eco never scales it or sets
//! instance health), or read any other group.

mod api;
mod identity;

use super::{
    Group, Host, Identity, Instance, Provider, ProviderError, Replacement, TerminationHook,
    TerminationNotice,
};
use crate::config::AwsProviderConfig;
use api::AwsApi;
use identity::Imds;
use recovery::asg;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

/// The bound of each attempt of every Auto Scaling, EC2 and instance
/// metadata call (`provider.aws.max_attempts` attempts, with the SDK's
/// back-off between them). Their answers are small; 10 s is ample for a
/// healthy API and short beside the group's refresh.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

pub struct AwsProvider {
    identity: Identity,
    imds: Imds,
    api: AwsApi,
    group_name: String,
    refresh: Duration,
    /// The last termination notice `discover` saw.
    termination: Mutex<Option<TerminationNotice>>,
    /// The group's termination hook, once read (`Some(None)`: it has
    /// none).
    hook: tokio::sync::Mutex<Option<Option<TerminationHook>>>,
}

impl AwsProvider {
    /// Reads this instance's identity from the metadata service and finds
    /// its group.
    /// `refresh` is how often the group is read again
    /// (`provider.refresh_interval`).
    pub async fn connect(
        config: &AwsProviderConfig,
        refresh: Duration,
    ) -> Result<Self, ProviderError> {
        let imds = Imds::new(CALL_TIMEOUT, config.max_attempts);
        let md = imds.metadata().await?;
        let region = config.region.clone().unwrap_or_else(|| md.region.clone());
        let api = AwsApi::new(config, region).await;
        let group_name = match &config.group_name {
            Some(name) => name.clone(),
            None => api.group_of(&md.instance_id).await?.ok_or_else(|| {
                ProviderError::NotConfigured(format!(
                    "instance {} belongs to no auto-scaling group; set provider.aws.group_name",
                    md.instance_id
                ))
            })?,
        };
        tracing::info!(
            instance = %md.instance_id,
            address = %md.private_ip,
            zone = %md.zone,
            region = %md.region,
            group = %group_name,
            "AWS provider: identity from the instance metadata service"
        );
        Ok(Self {
            identity: Identity {
                id: md.instance_id,
                host: Host::Ip(md.private_ip),
                bind: md.private_ip,
                zone: Some(md.zone),
            },
            imds,
            api,
            group_name,
            refresh,
            termination: Mutex::new(None),
            hook: tokio::sync::Mutex::new(None),
        })
    }

    /// The group's termination hook, read once (again after an error).
    async fn hook(&self) -> Result<Option<TerminationHook>, ProviderError> {
        let mut cached = self.hook.lock().await;
        if let Some(h) = cached.as_ref() {
            return Ok(h.clone());
        }
        let h = self.api.termination_hook(&self.group_name).await?;
        *cached = Some(h.clone());
        Ok(h)
    }

    /// The notice, when this instance's own state says it is being
    /// terminated.
    async fn notice(&self, own_state: Option<&str>) -> Option<TerminationNotice> {
        let source = match own_state {
            Some(s) if s.starts_with("Terminating") => format!("lifecycle state {s}"),
            _ => match self.imds.target_lifecycle_state().await.as_deref() {
                Some("Terminated") => "metadata target lifecycle state Terminated".to_string(),
                _ => return None,
            },
        };
        // Only `Terminating:Wait` waits for eco: in any other state the
        // hook was completed already (or there is none), and completing
        // again would fail.
        let hook = if own_state == Some("Terminating:Wait") {
            match self.hook().await {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the group's lifecycle hooks; asking again on the next refresh");
                    None
                }
            }
        } else {
            None
        };
        Some(TerminationNotice { source, hook })
    }
}

#[async_trait::async_trait]
impl Provider for AwsProvider {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn refresh_interval(&self) -> Duration {
        self.refresh
    }

    async fn discover(&self) -> Result<Group, ProviderError> {
        let group = self.api.group(&self.group_name).await?;
        let asked: BTreeSet<String> = group
            .rows
            .iter()
            .filter(|r| asg::standing(&r.lifecycle_state).counts())
            .map(|r| r.id.clone())
            .collect();
        let ec2 = self.api.instances(&asked).await?;
        // An instance the group lists as a member but EC2 does not know
        // (yet: EC2 is eventually consistent) is unknown, not gone: the
        // answer is incomplete and the last complete view stays.
        if !ec2.not_found.is_empty() {
            return Err(ProviderError::Incomplete(format!(
                "EC2 does not know {:?}, which the group lists",
                ec2.not_found
            )));
        }
        let answer = asg::group_answer(&group.rows, &ec2.rows)
            .map_err(|e| ProviderError::Incomplete(e.to_string()))?;
        for (id, state) in &answer.unknown_states {
            tracing::warn!(%id, %state, "an instance is in a lifecycle state eco does not know; it stays a member");
        }
        let mut instances = Vec::with_capacity(answer.members.len());
        for m in answer.members {
            let host = Host::parse(&m.private_ip).map_err(|e| {
                ProviderError::Incomplete(format!("{}'s private address: {e}", m.id))
            })?;
            instances.push(Instance {
                id: m.id,
                host,
                zone: (!m.zone.is_empty()).then_some(m.zone),
            });
        }
        let own_state = group
            .rows
            .iter()
            .find(|r| r.id == self.identity.id)
            .map(|r| r.lifecycle_state.as_str());
        let notice = self.notice(own_state).await;
        *self.termination.lock().unwrap_or_else(|p| p.into_inner()) = notice;
        Ok(Group {
            self_id: self.identity.id.clone(),
            instances,
            desired_size: group.desired_capacity,
            departing: Default::default(),
        })
    }

    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError> {
        let asked: BTreeSet<String> = ids
            .iter()
            .filter(|id| asg::is_instance_id(id))
            .cloned()
            .collect();
        if asked.is_empty() {
            return Ok(BTreeSet::new());
        }
        let ec2 = self.api.instances(&asked).await?;
        Ok(asg::departed(&asked, &ec2.rows, &ec2.not_found))
    }

    fn termination(&self) -> Option<TerminationNotice> {
        self.termination
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn termination_heartbeat(&self, hook: &TerminationHook) -> Result<(), ProviderError> {
        self.api.heartbeat(hook, &self.identity.id).await
    }

    async fn complete_termination(&self, hook: &TerminationHook) -> Result<(), ProviderError> {
        self.api.complete(hook, &self.identity.id).await
    }

    /// `SetInstanceHealth Unhealthy` (respecting the group's health-check
    /// grace period): the group terminates the instance through its
    /// lifecycle hook (eco leaves gracefully) and launches a replacement.
    async fn request_replacement(&self, _reason: &str) -> Result<Replacement, ProviderError> {
        self.api.mark_unhealthy(&self.identity.id).await?;
        Ok(Replacement::Requested(format!(
            "instance {} marked Unhealthy in group {}: the group replaces it",
            self.identity.id, self.group_name
        )))
    }
}
