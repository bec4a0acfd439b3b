//! The Auto Scaling and EC2 calls the AWS provider makes, and nothing
//! else (docs/aws.md lists them as the IAM policy):
//!
//! - `autoscaling:DescribeAutoScalingInstances` — this instance's group;
//! - `autoscaling:DescribeAutoScalingGroups` — desired capacity, every
//!   instance with lifecycle state and zone;
//! - `autoscaling:DescribeLifecycleHooks` — the termination hook's name and
//!   timeouts;
//! - `autoscaling:RecordLifecycleActionHeartbeat`,
//!   `autoscaling:CompleteLifecycleAction` — on this instance only;
//! - `ec2:DescribeInstances` — private addresses and EC2 states, by ids,
//!   every page.
//!
//! Every call has the SDK's per-attempt timeout and standard retries
//! (throttling backs off); an error after them is an error, never an empty
//! answer.

use super::super::{ProviderError, TerminationHook};
use crate::config::AwsProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_autoscaling::error::{DisplayErrorContext, ProvideErrorMetadata};
use recovery::asg::{Ec2Row, GroupRow};
use std::collections::BTreeSet;

/// At most this many ids per `DescribeInstances` call.
const IDS_PER_CALL: usize = 100;

/// The transition a termination hook is registered for.
const TERMINATING: &str = "autoscaling:EC2_INSTANCE_TERMINATING";

fn aws_error<E>(call: &'static str, e: E) -> ProviderError
where
    E: std::error::Error + ProvideErrorMetadata,
{
    ProviderError::Aws {
        call,
        message: format!("{}", DisplayErrorContext(&e)),
    }
}

/// The group as one `DescribeAutoScalingGroups` answer gives it.
#[derive(Clone, Debug)]
pub struct GroupRows {
    pub desired_capacity: usize,
    pub rows: Vec<GroupRow>,
}

/// What `DescribeInstances` answered for some ids.
#[derive(Clone, Debug, Default)]
pub struct Ec2Answer {
    pub rows: Vec<Ec2Row>,
    /// Ids EC2 answered `InvalidInstanceID.NotFound` for.
    pub not_found: BTreeSet<String>,
}

/// Clients of the Auto Scaling and EC2 APIs of one region.
#[derive(Clone, Debug)]
pub struct AwsApi {
    autoscaling: aws_sdk_autoscaling::Client,
    ec2: aws_sdk_ec2::Client,
}

impl AwsApi {
    pub async fn new(config: &AwsProviderConfig, region: String) -> Self {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(region))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(super::CALL_TIMEOUT)
                    .operation_attempt_timeout(super::CALL_TIMEOUT)
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(config.max_attempts.max(1)));
        if let Some(endpoint) = &config.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let shared = loader.load().await;
        Self {
            autoscaling: aws_sdk_autoscaling::Client::new(&shared),
            ec2: aws_sdk_ec2::Client::new(&shared),
        }
    }

    /// The auto-scaling group of `instance_id`, `None` when it belongs to
    /// none.
    pub async fn group_of(&self, instance_id: &str) -> Result<Option<String>, ProviderError> {
        let out = self
            .autoscaling
            .describe_auto_scaling_instances()
            .instance_ids(instance_id)
            .send()
            .await
            .map_err(|e| aws_error("DescribeAutoScalingInstances", e))?;
        Ok(out
            .auto_scaling_instances()
            .iter()
            .find(|i| i.instance_id() == Some(instance_id))
            .and_then(|i| i.auto_scaling_group_name())
            .map(str::to_string))
    }

    /// The group's desired capacity and instances.
    pub async fn group(&self, name: &str) -> Result<GroupRows, ProviderError> {
        let out = self
            .autoscaling
            .describe_auto_scaling_groups()
            .auto_scaling_group_names(name)
            .send()
            .await
            .map_err(|e| aws_error("DescribeAutoScalingGroups", e))?;
        let group = out
            .auto_scaling_groups()
            .iter()
            .find(|g| g.auto_scaling_group_name() == Some(name))
            .ok_or_else(|| ProviderError::Aws {
                call: "DescribeAutoScalingGroups",
                message: format!("no auto-scaling group named {name:?}"),
            })?;
        let desired = group.desired_capacity().unwrap_or(0).max(0) as usize;
        let rows = group
            .instances()
            .iter()
            .filter_map(|i| {
                Some(GroupRow {
                    id: i.instance_id()?.to_string(),
                    lifecycle_state: i
                        .lifecycle_state()
                        .map(|s| s.as_str().to_string())
                        .unwrap_or_default(),
                    zone: i.availability_zone().unwrap_or_default().to_string(),
                })
            })
            .collect();
        Ok(GroupRows {
            desired_capacity: desired,
            rows,
        })
    }

    /// EC2's answer for `ids`: every page of every batch. An id EC2 does
    /// not know fails its whole batch with `InvalidInstanceID.NotFound`;
    /// that batch is asked again id by id, so the answer names exactly the
    /// ids not found.
    pub async fn instances(&self, ids: &BTreeSet<String>) -> Result<Ec2Answer, ProviderError> {
        let mut answer = Ec2Answer::default();
        let ids: Vec<String> = ids.iter().cloned().collect();
        for batch in ids.chunks(IDS_PER_CALL) {
            match self.describe(batch).await {
                Ok(rows) => answer.rows.extend(rows),
                Err(Describe::NotFound) => {
                    for id in batch {
                        match self.describe(std::slice::from_ref(id)).await {
                            Ok(rows) => answer.rows.extend(rows),
                            Err(Describe::NotFound) => {
                                answer.not_found.insert(id.clone());
                            }
                            Err(Describe::Failed(e)) => return Err(e),
                        }
                    }
                }
                Err(Describe::Failed(e)) => return Err(e),
            }
        }
        Ok(answer)
    }

    async fn describe(&self, ids: &[String]) -> Result<Vec<Ec2Row>, Describe> {
        let mut pages = self
            .ec2
            .describe_instances()
            .set_instance_ids(Some(ids.to_vec()))
            .into_paginator()
            .send();
        let mut rows = Vec::new();
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(p) => p,
                Err(e) if e.code() == Some("InvalidInstanceID.NotFound") => {
                    return Err(Describe::NotFound);
                }
                Err(e) => return Err(Describe::Failed(aws_error("DescribeInstances", e))),
            };
            for r in page.reservations() {
                for i in r.instances() {
                    let Some(id) = i.instance_id() else { continue };
                    rows.push(Ec2Row {
                        id: id.to_string(),
                        state: i
                            .state()
                            .and_then(|s| s.name())
                            .map(|n| n.as_str().to_string())
                            .unwrap_or_default(),
                        private_ip: i.private_ip_address().map(str::to_string),
                    });
                }
            }
        }
        Ok(rows)
    }

    /// The group's termination hook, if it has one.
    pub async fn termination_hook(
        &self,
        group: &str,
    ) -> Result<Option<TerminationHook>, ProviderError> {
        let out = self
            .autoscaling
            .describe_lifecycle_hooks()
            .auto_scaling_group_name(group)
            .send()
            .await
            .map_err(|e| aws_error("DescribeLifecycleHooks", e))?;
        Ok(out
            .lifecycle_hooks()
            .iter()
            .find(|h| h.lifecycle_transition() == Some(TERMINATING))
            .and_then(|h| {
                Some(TerminationHook {
                    group: group.to_string(),
                    name: h.lifecycle_hook_name()?.to_string(),
                    // AWS's default heartbeat timeout is one hour.
                    heartbeat_timeout_ms: h.heartbeat_timeout().unwrap_or(3600).max(1) as u64
                        * 1000,
                    global_timeout_ms: h.global_timeout().map(|s| s.max(0) as u64 * 1000),
                })
            }))
    }

    pub async fn heartbeat(
        &self,
        hook: &TerminationHook,
        instance_id: &str,
    ) -> Result<(), ProviderError> {
        self.autoscaling
            .record_lifecycle_action_heartbeat()
            .auto_scaling_group_name(&hook.group)
            .lifecycle_hook_name(&hook.name)
            .instance_id(instance_id)
            .send()
            .await
            .map_err(|e| aws_error("RecordLifecycleActionHeartbeat", e))?;
        Ok(())
    }

    pub async fn mark_unhealthy(&self, instance_id: &str) -> Result<(), ProviderError> {
        self.autoscaling
            .set_instance_health()
            .instance_id(instance_id)
            .health_status("Unhealthy")
            .should_respect_grace_period(true)
            .send()
            .await
            .map_err(|e| aws_error("SetInstanceHealth", e))?;
        Ok(())
    }

    pub async fn complete(
        &self,
        hook: &TerminationHook,
        instance_id: &str,
    ) -> Result<(), ProviderError> {
        self.autoscaling
            .complete_lifecycle_action()
            .auto_scaling_group_name(&hook.group)
            .lifecycle_hook_name(&hook.name)
            .instance_id(instance_id)
            .lifecycle_action_result("CONTINUE")
            .send()
            .await
            .map_err(|e| aws_error("CompleteLifecycleAction", e))?;
        Ok(())
    }
}

enum Describe {
    NotFound,
    Failed(ProviderError),
}
