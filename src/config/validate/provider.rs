//! `[provider]`: the table of the chosen kind, and only that one; names
//! Kubernetes or AWS would refuse; the group's refresh and call times.

use super::{Checker, Problem, valid_name};
use crate::config::{ProviderConfig, ProviderKind};
use std::time::Duration;

impl ProviderConfig {
    /// What is wrong with `[provider]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        match self.kind {
            ProviderKind::Static => match &self.static_group {
                None => ck.fail(
                    "provider.static",
                    "the table is required when provider.kind = \"static\"; it needs at least `group_file`",
                ),
                Some(s) => {
                    if s.group_file.as_os_str().is_empty() {
                        ck.fail("provider.static.group_file", "must not be empty; give the path of the group file");
                    }
                    if let Some(id) = &s.instance_id
                        && !valid_instance_id(id) {
                            ck.fail(
                                "provider.static.instance_id",
                                format!("{id:?} is not a valid instance id; allowed: 1 to 128 letters, digits, '-', '_' and '.'"),
                            );
                        }
                }
            },
            ProviderKind::Statefulset => match &self.statefulset {
                None => ck.fail(
                    "provider.statefulset",
                    "the table is required when provider.kind = \"statefulset\"; it needs `service` and `replicas` or `replicas_file`",
                ),
                Some(s) => statefulset(&mut ck, s),
            },
            ProviderKind::Aws => {
                if let Some(a) = &self.aws {
                    if let Some(name) = &a.group_name
                        && (name.trim().is_empty() || name.len() > 255) {
                            ck.fail("provider.aws.group_name", "must be 1 to 255 characters; or remove it to use the instance's own group");
                        }
                    if let Some(region) = &a.region
                        && (region.is_empty() || !region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')) {
                            ck.fail("provider.aws.region", format!("{region:?} is not a region name (like \"eu-west-1\")"));
                        }
                    if let Some(endpoint) = &a.endpoint
                        && !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                            ck.fail("provider.aws.endpoint", format!("{endpoint:?} is not an http(s) URL"));
                        }
                    ck.at_least("provider.aws.leave_timeout", a.leave_timeout, Duration::from_secs(10));
                    if !(1..=10).contains(&a.max_attempts) {
                        ck.fail("provider.aws.max_attempts", format!("{} is out of range; allowed: 1 to 10", a.max_attempts));
                    }
                }
            }
        }
        if let Some(every) = self.refresh_interval {
            // The AWS APIs' request rates: one read a second at most.
            let floor = match self.kind {
                ProviderKind::Aws => Duration::from_secs(1),
                ProviderKind::Static | ProviderKind::Statefulset => Duration::from_millis(100),
            };
            ck.at_least("provider.refresh_interval", every, floor);
        }
        if self.kind != ProviderKind::Statefulset && self.statefulset.is_some() {
            ck.fail("provider.statefulset", "is set but provider.kind is not \"statefulset\"; set provider.kind = \"statefulset\" or remove the table");
        }
        if self.kind != ProviderKind::Aws && self.aws.is_some() {
            ck.fail("provider.aws", "is set but provider.kind is not \"aws\"; set provider.kind = \"aws\" or remove the table");
        }
        if self.kind != ProviderKind::Static && self.static_group.is_some() {
            ck.fail("provider.static", "is set but provider.kind is not \"static\"; set provider.kind = \"static\" or remove the table");
        }

        ck.problems
    }
}

fn valid_instance_id(s: &str) -> bool {
    crate::base::names::check_instance_id(s).is_ok()
}

/// A DNS label (RFC 1123): what Kubernetes names services, namespaces and
/// StatefulSets with.
fn dns_label(s: &str) -> bool {
    valid_name(s)
}

fn statefulset(ck: &mut Checker, s: &crate::config::StatefulSetProviderConfig) {
    let label = "1 to 63 lowercase letters, digits and '-', not starting or ending with '-'";
    if !dns_label(&s.service) {
        ck.fail(
            "provider.statefulset.service",
            format!("{:?} is not a service name; allowed: {label}", s.service),
        );
    }
    if let Some(set) = &s.set
        && !dns_label(set)
    {
        ck.fail(
            "provider.statefulset.set",
            format!("{set:?} is not a StatefulSet name; allowed: {label}"),
        );
    }
    if let Some(ns) = &s.namespace
        && !dns_label(ns)
    {
        ck.fail(
            "provider.statefulset.namespace",
            format!("{ns:?} is not a namespace; allowed: {label}"),
        );
    }
    if !s.cluster_domain.split('.').all(dns_label) {
        ck.fail(
            "provider.statefulset.cluster_domain",
            format!(
                "{:?} is not a DNS domain (labels of {label}, joined by '.')",
                s.cluster_domain
            ),
        );
    }
    match (s.replicas, &s.replicas_file) {
        (Some(_), Some(_)) => ck.fail(
            "provider.statefulset.replicas",
            "both `replicas` and `replicas_file` are set; keep one",
        ),
        (None, None) => ck.fail(
            "provider.statefulset.replicas",
            "the desired size is required: set `replicas`, or `replicas_file` (a file holding it)",
        ),
        (Some(n), None) if n == 0 || n > recovery::statefulset::MAX_REPLICAS => ck.fail(
            "provider.statefulset.replicas",
            format!(
                "{n} is out of range; allowed: 1 to {} (etcd advises at most 7 members)",
                recovery::statefulset::MAX_REPLICAS
            ),
        ),
        _ => {}
    }
}
