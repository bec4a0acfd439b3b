//! `[etcd]` on its own: the data directory, URLs and ports, the backend
//! quota and defragmentation, compaction, raft timings, extra flags (none
//! that eco owns), the supervisor's and the calls' times. Its TLS files
//! are checked against the snapshot store in `super` (a cross-section
//! rule: generated TLS keeps its CA in the store).

use super::{Checker, Problem};
use crate::config::{AutoCompactionMode, ConfigDuration, EtcdConfig};
use std::time::Duration;

impl EtcdConfig {
    /// What is wrong with `[etcd]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        if self.data_dir.parent().is_none() || self.data_dir.as_os_str().is_empty() {
            ck.fail(
                "etcd.data_dir",
                format!(
                    "{} has no parent directory; the state file lives beside the data directory",
                    self.data_dir.display()
                ),
            );
        }
        for (i, url) in self.advertise_client_urls.iter().enumerate() {
            let key = format!("etcd.advertise_client_urls[{i}]");
            let want = format!("{}://", self.effective_client_scheme().as_str());
            let rest = url.strip_prefix(want.as_str());
            let ok = rest.is_some_and(|r| {
                let authority = r.trim_end_matches('/');
                !authority.is_empty()
                    && !authority.contains('/')
                    && !authority.contains(',')
                    && authority.rsplit_once(':').is_some_and(|(h, p)| {
                        !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0)
                    })
            });
            if !ok {
                ck.fail(
                    &key,
                    format!(
                        "{url:?} is not a client URL; allowed: {want}HOST:PORT (the client surface's scheme, which follows [etcd.tls]; a host or address; a port)"
                    ),
                );
            }
        }
        ck.port("etcd.client_port", self.client_port);
        ck.port("etcd.peer_port", self.peer_port);
        ck.port("etcd.metrics_port", self.metrics_port);
        ck.port("etcd.client_http_port", self.client_http_port);
        const MIB: u64 = 1024 * 1024;
        if !(16 * MIB..=100 * 1024 * MIB).contains(&self.quota_backend_bytes) {
            ck.fail(
                "etcd.quota_backend_bytes",
                format!(
                    "{} is out of range; allowed: 16 MiB (16777216) to 100 GiB (107374182400)",
                    self.quota_backend_bytes
                ),
            );
        }
        if !(self.defrag.min_ratio > 0.0 && self.defrag.min_ratio <= 1.0) {
            ck.fail(
                "etcd.defrag.min_ratio",
                format!(
                    "{} is out of range; allowed: more than 0 and at most 1 (the share of a member's database that must be reclaimable)",
                    self.defrag.min_ratio
                ),
            );
        }
        ck.at_least(
            "etcd.defrag.timeout",
            self.defrag.timeout,
            Duration::from_secs(10),
        );
        match self.auto_compaction_mode {
            AutoCompactionMode::Periodic => {
                let r = self.auto_compaction_retention.trim();
                if r != "0" && r.parse::<ConfigDuration>().is_err() {
                    ck.fail(
                        "etcd.auto_compaction_retention",
                        format!("{r:?} is not a duration; with auto_compaction_mode = \"periodic\" write a duration like \"1h\" or \"30m\" (\"0\" disables)"),
                    );
                }
            }
            AutoCompactionMode::Revision => {
                if self
                    .auto_compaction_retention
                    .trim()
                    .parse::<u64>()
                    .is_err()
                {
                    ck.fail(
                        "etcd.auto_compaction_retention",
                        format!("{:?} is not a revision count; with auto_compaction_mode = \"revision\" write a whole number like \"10000\"", self.auto_compaction_retention),
                    );
                }
            }
        }
        ck.at_least(
            "etcd.heartbeat_interval",
            self.heartbeat_interval,
            Duration::from_millis(10),
        );
        if self.election_timeout.get() < self.heartbeat_interval.get() * 5 {
            ck.fail(
                "etcd.election_timeout",
                format!(
                    "{} is too short for heartbeat_interval = {}; allowed: at least 5 heartbeat intervals",
                    self.election_timeout, self.heartbeat_interval
                ),
            );
        }
        if self.election_timeout.get() > Duration::from_secs(50) {
            ck.fail(
                "etcd.election_timeout",
                format!(
                    "{} is too long; allowed: at most 50s (etcd's limit)",
                    self.election_timeout
                ),
            );
        }
        for (i, flag) in self.extra_flags.iter().enumerate() {
            let key = format!("etcd.extra_flags[{i}]");
            let Some(body) = flag.strip_prefix("--") else {
                ck.fail(
                    &key,
                    format!("{flag:?} is not a flag; allowed: \"--name=value\" or \"--name\""),
                );
                continue;
            };
            let name = body.split('=').next().unwrap_or(body);
            if recovery::etcd_flags::owned_by_eco(name) {
                ck.fail(
                    &key,
                    format!("--{name} is set by eco itself and may not be overridden; set the matching eco key instead (see docs/configuration.md)"),
                );
            }
        }
        ck.at_least(
            "etcd.stop_timeout",
            self.stop_timeout,
            Duration::from_millis(100),
        );
        ck.at_least(
            "etcd.restart_backoff_initial",
            self.restart_backoff_initial,
            Duration::from_millis(10),
        );
        if self.restart_backoff_max < self.restart_backoff_initial {
            ck.fail(
                "etcd.restart_backoff_max",
                format!("{} is below restart_backoff_initial = {}; allowed: at least restart_backoff_initial", self.restart_backoff_max, self.restart_backoff_initial),
            );
        }
        ck.at_least(
            "etcd.call_timeout",
            self.call_timeout,
            Duration::from_millis(100),
        );
        if self.call_timeout.get() > Duration::from_secs(300) {
            ck.fail(
                "etcd.call_timeout",
                format!("{} is too long; allowed: at most 5m", self.call_timeout),
            );
        }
        ck.at_least(
            "etcd.probe_interval",
            self.probe_interval,
            Duration::from_millis(100),
        );
        ck.at_least(
            "etcd.keep_moved_aside_for",
            self.keep_moved_aside_for,
            Duration::from_secs(3600),
        );
        if self.keep_moved_aside == 0 {
            ck.fail(
                "etcd.keep_moved_aside",
                "0 would delete moved-aside data at once; allowed: 1 or more",
            );
        }

        ck.problems
    }
}
