//! Checks serde cannot do: ranges, cross-key rules, provider requirements.
//! Every problem names the key, says what is wrong and what is allowed.

use super::{
    AutoCompactionMode, Config, ConfigDuration, EtcdConfig, ProviderKind, S3Encryption,
    S3StoreConfig, Scheme, SnapshotStoreKind,
};
use recovery::fenced::{ProtocolConfig, Setting, WatchedTiming};
use std::fmt;
use std::time::Duration;

/// One thing wrong with a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key, e.g. `etcd.client_port`.
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

/// `[etcd.tls]` against the schemes: a surface is `https` exactly when it
/// has TLS; eco has a client certificate exactly when it needs one (or may
/// present one); no empty path; generated mode alone, with sane times and
/// names, and a store to keep the CA in.
fn tls(ck: &mut Checker, e: &EtcdConfig, store: SnapshotStoreKind) {
    let t = &e.tls;
    if t.plaintext
        && (t.client.is_some() || t.peer.is_some() || t.eco.is_some() || t.generated.is_some())
    {
        ck.fail(
            "etcd.tls.plaintext",
            "plaintext = true says etcd's traffic is in the clear on purpose, but TLS tables are given too: remove one or the other",
        );
    }
    if let Some(g) = &e.tls.generated {
        let t = &e.tls;
        if t.client.is_some() || t.peer.is_some() || t.eco.is_some() {
            ck.fail(
                "etcd.tls.generated",
                "eco generates every TLS file in this mode: remove [etcd.tls.client], [etcd.tls.peer] and [etcd.tls.eco], or remove [etcd.tls.generated] to use your own files",
            );
        }
        if store == SnapshotStoreKind::None {
            ck.fail(
                "etcd.tls.generated",
                "the cluster's CA lives in the snapshot store (sealed with the gossip key): set snapshot.store",
            );
        }
        ck.at_least(
            "etcd.tls.generated.validity",
            g.validity,
            Duration::from_secs(3600),
        );
        if g.renew_before.get() >= g.validity.get() {
            ck.fail(
                "etcd.tls.generated.renew_before",
                format!(
                    "{} is not shorter than validity ({}): every certificate would be renewed at once",
                    g.renew_before, g.validity
                ),
            );
        }
        for (i, name) in g.extra_names.iter().enumerate() {
            if crate::names::Host::parse(name).is_err() {
                ck.fail(
                    &format!("etcd.tls.generated.extra_names[{i}]"),
                    format!("{name:?} is not an IP address or a DNS name"),
                );
            }
        }
    }
    let files = e.tls_files();
    for (surface, scheme, tls) in [
        ("client", e.client_scheme, &files.client),
        ("peer", e.peer_scheme, &files.peer),
    ] {
        let key = format!("etcd.{surface}_scheme");
        match (scheme, tls) {
            (Some(Scheme::Https), None) => ck.fail(
                &key,
                format!("\"https\" needs [etcd.tls.{surface}] (cert_file, key_file, trusted_ca_file); allowed without it: \"http\""),
            ),
            (Some(Scheme::Http), Some(_)) => ck.fail(
                &key,
                format!("[etcd.tls.{surface}] is set, so the {surface} surface is served over TLS: set \"https\" or leave the key out"),
            ),
            _ => {}
        }
    }
    let t = &e.tls;
    match (&t.client, &t.eco) {
        (Some(client), None) if client.client_cert_auth => ck.fail(
            "etcd.tls.eco",
            "etcd.tls.client.client_cert_auth is true, so eco needs its own client certificate: set [etcd.tls.eco] cert_file and key_file (a certificate the client surface's trusted_ca_file signed)",
        ),
        (None, Some(_)) => ck.fail(
            "etcd.tls.eco",
            "eco's client certificate is for a client surface with TLS: set [etcd.tls.client] too, or remove [etcd.tls.eco]",
        ),
        _ => {}
    }
    for (key, path, _) in &t.files() {
        if path.as_os_str().is_empty() {
            ck.fail(key, "an empty path; allowed: the path of a PEM file");
        }
    }
}

struct Checker {
    problems: Vec<Problem>,
}

impl Checker {
    fn fail(&mut self, key: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            key: key.to_string(),
            message: message.into(),
        });
    }

    fn port(&mut self, key: &str, value: u32) {
        if !(1..=65535).contains(&value) {
            self.fail(key, format!("{value} is not a port; allowed: 1 to 65535"));
        }
    }

    fn at_least(&mut self, key: &str, value: ConfigDuration, min: Duration) {
        if value.get() < min {
            self.fail(
                key,
                format!(
                    "{value} is too short; allowed: at least {}",
                    ConfigDuration(min)
                ),
            );
        }
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn valid_instance_id(s: &str) -> bool {
    crate::names::check_instance_id(s).is_ok()
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
    if let Some(set) = &s.set {
        if !dns_label(set) {
            ck.fail(
                "provider.statefulset.set",
                format!("{set:?} is not a StatefulSet name; allowed: {label}"),
            );
        }
    }
    if let Some(ns) = &s.namespace {
        if !dns_label(ns) {
            ck.fail(
                "provider.statefulset.namespace",
                format!("{ns:?} is not a namespace; allowed: {label}"),
            );
        }
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
    ck.at_least(
        "provider.statefulset.refresh_interval",
        s.refresh_interval,
        Duration::from_millis(100),
    );
}

/// Returns every problem found; empty means the config is usable.
pub fn validate(c: &Config) -> Vec<Problem> {
    let mut ck = Checker {
        problems: Vec::new(),
    };

    if !valid_name(&c.cluster.name) {
        ck.fail(
            "cluster.name",
            format!(
                "{:?} is not a valid cluster name; allowed: 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'",
                c.cluster.name
            ),
        );
    }

    match c.provider.kind {
        ProviderKind::Static => match &c.provider.static_group {
            None => ck.fail(
                "provider.static",
                "the table is required when provider.kind = \"static\"; it needs at least `group_file`",
            ),
            Some(s) => {
                if s.group_file.as_os_str().is_empty() {
                    ck.fail("provider.static.group_file", "must not be empty; give the path of the group file");
                }
                if let Some(id) = &s.instance_id {
                    if !valid_instance_id(id) {
                        ck.fail(
                            "provider.static.instance_id",
                            format!("{id:?} is not a valid instance id; allowed: 1 to 128 letters, digits, '-', '_' and '.'"),
                        );
                    }
                }
                ck.at_least("provider.static.refresh_interval", s.refresh_interval, Duration::from_millis(100));
            }
        },
        ProviderKind::Statefulset => match &c.provider.statefulset {
            None => ck.fail(
                "provider.statefulset",
                "the table is required when provider.kind = \"statefulset\"; it needs `service` and `replicas` or `replicas_file`",
            ),
            Some(s) => statefulset(&mut ck, s),
        },
        ProviderKind::Aws => {
            if let Some(a) = &c.provider.aws {
                if let Some(name) = &a.group_name {
                    if name.trim().is_empty() || name.len() > 255 {
                        ck.fail("provider.aws.group_name", "must be 1 to 255 characters; or remove it to use the instance's own group");
                    }
                }
                if let Some(region) = &a.region {
                    if region.is_empty() || !region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
                        ck.fail("provider.aws.region", format!("{region:?} is not a region name (like \"eu-west-1\")"));
                    }
                }
                if let Some(endpoint) = &a.endpoint {
                    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                        ck.fail("provider.aws.endpoint", format!("{endpoint:?} is not an http(s) URL"));
                    }
                }
                ck.at_least("provider.aws.refresh_interval", a.refresh_interval, Duration::from_secs(1));
                ck.at_least("provider.aws.call_timeout", a.call_timeout, Duration::from_millis(100));
                ck.at_least("provider.aws.leave_timeout", a.leave_timeout, Duration::from_secs(10));
                if !(1..=10).contains(&a.max_attempts) {
                    ck.fail("provider.aws.max_attempts", format!("{} is out of range; allowed: 1 to 10", a.max_attempts));
                }
            }
        }
    }
    if c.provider.kind != ProviderKind::Statefulset && c.provider.statefulset.is_some() {
        ck.fail("provider.statefulset", "is set but provider.kind is not \"statefulset\"; set provider.kind = \"statefulset\" or remove the table");
    }
    if c.provider.kind != ProviderKind::Aws && c.provider.aws.is_some() {
        ck.fail("provider.aws", "is set but provider.kind is not \"aws\"; set provider.kind = \"aws\" or remove the table");
    }
    if c.provider.kind != ProviderKind::Static && c.provider.static_group.is_some() {
        ck.fail("provider.static", "is set but provider.kind is not \"static\"; set provider.kind = \"static\" or remove the table");
    }

    let e = &c.etcd;
    if e.data_dir.parent().is_none() || e.data_dir.as_os_str().is_empty() {
        ck.fail(
            "etcd.data_dir",
            format!(
                "{} has no parent directory; the state file lives beside the data directory",
                e.data_dir.display()
            ),
        );
    }
    tls(&mut ck, e, c.snapshot.store);
    for (i, url) in e.advertise_client_urls.iter().enumerate() {
        let key = format!("etcd.advertise_client_urls[{i}]");
        let want = format!("{}://", e.effective_client_scheme().as_str());
        let rest = url.strip_prefix(want.as_str());
        let ok = rest.is_some_and(|r| {
            let authority = r.trim_end_matches('/');
            !authority.is_empty()
                && !authority.contains('/')
                && !authority.contains(',')
                && authority
                    .rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0))
        });
        if !ok {
            ck.fail(
                &key,
                format!(
                    "{url:?} is not a client URL; allowed: {want}HOST:PORT (the scheme of etcd.client_scheme, a host or address, a port)"
                ),
            );
        }
    }
    ck.port("etcd.client_port", e.client_port);
    ck.port("etcd.peer_port", e.peer_port);
    ck.port("etcd.metrics_port", e.metrics_port);
    ck.port("gossip.port", c.gossip.port);
    ck.port("api.port", c.api.port);
    let ports = [
        ("etcd.client_port", e.client_port),
        ("etcd.peer_port", e.peer_port),
        ("etcd.metrics_port", e.metrics_port),
        ("api.port", c.api.port),
    ];
    for (i, (ka, a)) in ports.iter().enumerate() {
        for (kb, b) in &ports[i + 1..] {
            if a == b {
                ck.fail(
                    kb,
                    format!(
                        "port {b} is already used by `{ka}`; every TCP listener needs its own port"
                    ),
                );
            }
        }
    }
    const MIB: u64 = 1024 * 1024;
    if !(16 * MIB..=100 * 1024 * MIB).contains(&e.quota_backend_bytes) {
        ck.fail(
            "etcd.quota_backend_bytes",
            format!(
                "{} is out of range; allowed: 16 MiB (16777216) to 100 GiB (107374182400)",
                e.quota_backend_bytes
            ),
        );
    }
    if !(e.defrag.min_ratio > 0.0 && e.defrag.min_ratio <= 1.0) {
        ck.fail(
            "etcd.defrag.min_ratio",
            format!(
                "{} is out of range; allowed: more than 0 and at most 1 (the share of a member's database that must be reclaimable)",
                e.defrag.min_ratio
            ),
        );
    }
    ck.at_least(
        "etcd.defrag.timeout",
        e.defrag.timeout,
        Duration::from_secs(10),
    );
    match e.auto_compaction_mode {
        AutoCompactionMode::Periodic => {
            let r = e.auto_compaction_retention.trim();
            if r != "0" && r.parse::<ConfigDuration>().is_err() {
                ck.fail(
                    "etcd.auto_compaction_retention",
                    format!("{r:?} is not a duration; with auto_compaction_mode = \"periodic\" write a duration like \"1h\" or \"30m\" (\"0\" disables)"),
                );
            }
        }
        AutoCompactionMode::Revision => {
            if e.auto_compaction_retention.trim().parse::<u64>().is_err() {
                ck.fail(
                    "etcd.auto_compaction_retention",
                    format!("{:?} is not a revision count; with auto_compaction_mode = \"revision\" write a whole number like \"10000\"", e.auto_compaction_retention),
                );
            }
        }
    }
    ck.at_least(
        "etcd.heartbeat_interval",
        e.heartbeat_interval,
        Duration::from_millis(10),
    );
    if e.election_timeout.get() < e.heartbeat_interval.get() * 5 {
        ck.fail(
            "etcd.election_timeout",
            format!(
                "{} is too short for heartbeat_interval = {}; allowed: at least 5 heartbeat intervals",
                e.election_timeout, e.heartbeat_interval
            ),
        );
    }
    if e.election_timeout.get() > Duration::from_secs(50) {
        ck.fail(
            "etcd.election_timeout",
            format!(
                "{} is too long; allowed: at most 50s (etcd's limit)",
                e.election_timeout
            ),
        );
    }
    for (i, flag) in e.extra_flags.iter().enumerate() {
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
        e.stop_timeout,
        Duration::from_millis(100),
    );
    ck.at_least(
        "etcd.restart_backoff_initial",
        e.restart_backoff_initial,
        Duration::from_millis(10),
    );
    if e.restart_backoff_max < e.restart_backoff_initial {
        ck.fail(
            "etcd.restart_backoff_max",
            format!("{} is below restart_backoff_initial = {}; allowed: at least restart_backoff_initial", e.restart_backoff_max, e.restart_backoff_initial),
        );
    }
    ck.at_least(
        "etcd.call_timeout",
        e.call_timeout,
        Duration::from_millis(100),
    );
    if e.call_timeout.get() > Duration::from_secs(300) {
        ck.fail(
            "etcd.call_timeout",
            format!("{} is too long; allowed: at most 5m", e.call_timeout),
        );
    }
    ck.at_least(
        "etcd.probe_interval",
        e.probe_interval,
        Duration::from_millis(100),
    );
    ck.at_least(
        "etcd.keep_moved_aside_for",
        e.keep_moved_aside_for,
        Duration::from_secs(3600),
    );
    if e.keep_moved_aside == 0 {
        ck.fail(
            "etcd.keep_moved_aside",
            "0 would delete moved-aside data at once; allowed: 1 or more",
        );
    }

    if let Some(bind) = c.gossip.bind {
        if bind.port() == 0 {
            ck.fail(
                "gossip.bind",
                "port 0 would pick a random port peers cannot find; give a fixed port",
            );
        }
    }
    if let Some(bind) = c.api.bind {
        if bind.port() == 0 {
            ck.fail(
                "api.bind",
                "port 0 would pick a random port; give a fixed port",
            );
        }
    }
    if let Some(status) = c.api.status_bind {
        if status.port() == 0 {
            ck.fail(
                "api.status_bind",
                "port 0 would pick a random port `eco status` cannot find; give a fixed port",
            );
        }
        let clashes = match c.api.bind {
            Some(bind) => {
                bind.port() == status.port()
                    && (bind.ip() == status.ip()
                        || bind.ip().is_unspecified()
                        || status.ip().is_unspecified())
            }
            // The main listener is on the instance's address, known only
            // at run time: the same port on another address is fine.
            None => status.ip().is_unspecified() && u32::from(status.port()) == c.api.port,
        };
        if clashes {
            ck.fail(
                "api.status_bind",
                format!("{status} overlaps the main listener (api.bind/api.port); give another port, or another address than the main one"),
            );
        }
    }
    ck.problems.extend(c.api.tls.problems(e));

    let s = &c.snapshot;
    if s.store == SnapshotStoreKind::Dir && s.dir.is_none() {
        ck.fail(
            "snapshot.dir",
            "the table is required when snapshot.store = \"dir\"; it needs `path`",
        );
    }
    if s.store != SnapshotStoreKind::Dir && s.dir.is_some() {
        ck.fail("snapshot.dir", "is set but snapshot.store is not \"dir\"; set snapshot.store = \"dir\" or remove the table");
    }
    match (s.store, &s.s3) {
        (SnapshotStoreKind::S3, None) => ck.fail(
            "snapshot.s3",
            "the table is required when snapshot.store = \"s3\"; it needs at least `bucket`",
        ),
        (SnapshotStoreKind::S3, Some(s3)) => check_s3(&mut ck, s3),
        (_, Some(_)) => ck.fail(
            "snapshot.s3",
            "is set but snapshot.store is not \"s3\"; set snapshot.store = \"s3\" or remove the table",
        ),
        (_, None) => {}
    }
    ck.at_least("snapshot.interval", s.interval, Duration::from_secs(10));
    if s.max_age < s.interval {
        ck.fail(
            "snapshot.max_age",
            format!(
                "{} is below snapshot.interval = {}; allowed: at least the interval",
                s.max_age, s.interval
            ),
        );
    }
    if s.keep_last == 0 {
        ck.fail(
            "snapshot.keep_last",
            "0 would leave no snapshot; allowed: 1 or more",
        );
    }

    let r = &c.recovery;
    // The quorum-loss protocol's own timing rules (one place: recovery).
    let ms = |d: ConfigDuration| d.millis();
    let protocol =
        ProtocolConfig::for_timeout(ms(r.quorum_loss_timeout), r.accept_loss_after.map(ms));
    for problem in protocol.validate(WatchedTiming {
        election_timeout: ms(e.election_timeout),
        probe_interval: ms(e.probe_interval),
        call_timeout: ms(e.call_timeout),
    }) {
        let key = match problem.setting {
            Setting::QuorumLossTimeout => "recovery.quorum_loss_timeout",
            Setting::AcceptLossAfter => "recovery.accept_loss_after",
        };
        ck.fail(key, problem.message);
    }
    if let Some(after) = r.replace_unusable_after {
        if after.get() < e.election_timeout.get() * 10 {
            ck.fail(
                "recovery.replace_unusable_after",
                format!("{after} is shorter than 10 election timeouts; an election is not an unusable member; allowed: at least {}", ConfigDuration(e.election_timeout.get() * 10)),
            );
        }
    }
    if r.unhealthy_member_ttl.get() < e.election_timeout.get() * 10 {
        ck.fail(
            "recovery.unhealthy_member_ttl",
            format!("{} is shorter than 10 election timeouts; removing members during an election fights raft; allowed: at least {}", r.unhealthy_member_ttl, ConfigDuration(e.election_timeout.get() * 10)),
        );
    }
    ck.at_least(
        "recovery.learner_timeout",
        r.learner_timeout,
        Duration::from_secs(1),
    );
    if let Some(name) = &r.bootstrap_from {
        if name.trim().is_empty() {
            ck.fail(
                "recovery.bootstrap_from",
                "is empty; name a snapshot in the store or remove the key",
            );
        } else if s.store == SnapshotStoreKind::None {
            ck.fail(
                "recovery.bootstrap_from",
                "needs a snapshot store; set snapshot.store",
            );
        }
    }

    for (key, message) in super::auth::check(&c.auth, &e.tls_files()) {
        ck.fail(&key, message);
    }

    if let Err(why) = check_log_level(&c.log.level) {
        ck.fail(
            "log.level",
            format!("{:?} is not a log level ({why}); allowed: off, error, warn, info, debug, trace, or a filter like \"info,eco=debug\"", c.log.level),
        );
    }

    ck.problems
}

/// `[snapshot.s3]`: names S3 accepts, sizes within S3's multipart limits.
fn check_s3(ck: &mut Checker, s3: &S3StoreConfig) {
    if let Err(why) = check_bucket_name(&s3.bucket) {
        ck.fail(
            "snapshot.s3.bucket",
            format!("{:?} is not an S3 bucket name: {why}; allowed: 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit", s3.bucket),
        );
    }
    if s3.prefix.starts_with('/')
        || s3.prefix.ends_with('/')
        || crate::names::check_object_name(&s3.prefix).is_err()
        || s3.prefix.len() > 256
    {
        ck.fail(
            "snapshot.s3.prefix",
            format!("{:?} is not a key prefix eco can use; allowed: 1 to 256 bytes of '/'-separated segments of letters, digits and - _ . + =, no segment empty or starting with '.', no leading or trailing '/'", s3.prefix),
        );
    }
    if let Some(region) = &s3.region {
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            ck.fail(
                "snapshot.s3.region",
                format!("{region:?} is not a region name (like \"eu-west-1\")"),
            );
        }
    }
    if let Some(endpoint) = &s3.endpoint {
        let authority = endpoint
            .strip_prefix("https://")
            .or_else(|| endpoint.strip_prefix("http://"))
            .map(|rest| rest.split('/').next().unwrap_or(""));
        if !authority.is_some_and(|a| !a.is_empty() && !a.contains(char::is_whitespace)) {
            ck.fail(
                "snapshot.s3.endpoint",
                format!("{endpoint:?} is not an http(s) URL (like \"https://s3.example.com\" or \"http://127.0.0.1:9000\")"),
            );
        }
    }
    match (&s3.encryption, &s3.kms_key_id) {
        (S3Encryption::AwsKms, Some(key)) if key.trim().is_empty() => ck.fail(
            "snapshot.s3.kms_key_id",
            "is empty; name a KMS key (id, ARN or alias) or remove it to use the account's default key",
        ),
        (S3Encryption::AwsKms, _) | (_, None) => {}
        (_, Some(_)) => ck.fail(
            "snapshot.s3.kms_key_id",
            "is only used with encryption = \"aws:kms\"; set that or remove the key",
        ),
    }
    const MIB: u64 = 1024 * 1024;
    if !(5 * MIB..=5 * 1024 * MIB).contains(&s3.part_size) {
        ck.fail(
            "snapshot.s3.part_size",
            format!("{} bytes is outside S3's part sizes; allowed: 5 MiB (5242880) to 5 GiB (5368709120)", s3.part_size),
        );
    }
    if !(1..=16).contains(&s3.parts_in_flight) {
        ck.fail(
            "snapshot.s3.parts_in_flight",
            format!("{} is out of range; allowed: 1 to 16 (an upload holds part_size × (parts_in_flight + 1) bytes)", s3.parts_in_flight),
        );
    }
    ck.at_least(
        "snapshot.s3.call_timeout",
        s3.call_timeout,
        Duration::from_millis(100),
    );
    ck.at_least(
        "snapshot.s3.transfer_timeout",
        s3.transfer_timeout,
        Duration::from_secs(1),
    );
    if !(1..=10).contains(&s3.max_attempts) {
        ck.fail(
            "snapshot.s3.max_attempts",
            format!("{} is out of range; allowed: 1 to 10", s3.max_attempts),
        );
    }
}

/// S3's bucket naming rules (general purpose buckets).
fn check_bucket_name(name: &str) -> Result<(), &'static str> {
    if !(3..=63).contains(&name.len()) {
        return Err("it must be 3 to 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Err("it has a character other than lowercase letters, digits, '.' and '-'");
    }
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !alnum(name.bytes().next()) || !alnum(name.bytes().last()) {
        return Err("it must start and end with a letter or digit");
    }
    if name.contains("..") {
        return Err("it has two adjacent periods");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err("it is formatted as an IP address");
    }
    if ["xn--", "sthree-", "amzn-s3-demo-"]
        .iter()
        .any(|p| name.starts_with(p))
        || ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
    {
        return Err("it has a prefix or suffix S3 reserves");
    }
    Ok(())
}

const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A log filter is a comma-separated list of directives, each a level or
/// `target=level`. `tracing`'s own parser also takes a bare word as a
/// target enabled at every level — so a typo such as `warning` would be
/// read as "only the target named warning" and silence every line, errors
/// included. eco refuses it: every directive must end in a level.
fn check_log_level(filter: &str) -> Result<(), String> {
    let directives: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return Err("empty".into());
    }
    for d in directives {
        let level = d.rsplit_once('=').map_or(d, |(_, level)| level);
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!("{level:?} in {d:?} is not a level"));
        }
    }
    tracing_subscriber::EnvFilter::try_new(filter)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::parse_str;
    use std::path::Path;

    const BASE: &str = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n";

    /// Parses BASE plus `extra` and returns the rendered error, which must exist.
    fn error_of(extra: &str) -> String {
        match parse_str(
            &format!("{BASE}{extra}"),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        ) {
            Ok(_) => panic!("expected a problem with:\n{extra}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn generated_tls_rules_and_files() {
        let store = "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n";
        let c = parse_str(
            &format!("{BASE}{store}[etcd]\ndata_dir = \"/var/lib/eco/etcd\"\n[etcd.tls.generated]\nextra_names = [\"lb.example.com\", \"10.0.0.9\"]\n"),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .unwrap();
        assert_eq!(c.etcd.effective_client_scheme(), super::Scheme::Https);
        assert_eq!(c.etcd.effective_peer_scheme(), super::Scheme::Https);
        let files = c.etcd.tls_files();
        let client = files.client.unwrap();
        assert_eq!(client.cert_file, Path::new("/var/lib/eco/tls/member.crt"));
        assert_eq!(client.trusted_ca_file, Path::new("/var/lib/eco/tls/ca.crt"));
        assert!(client.client_cert_auth && files.peer.unwrap().client_cert_auth);
        assert_eq!(
            files.eco.unwrap().key_file,
            Path::new("/var/lib/eco/tls/eco.key")
        );
        let g = c.etcd.tls.generated.unwrap();
        assert_eq!(g.validity().as_secs(), 90 * 24 * 3600);
        assert_eq!(g.renew_before().as_secs(), 30 * 24 * 3600);
        for (extra, key, what) in [
            (
                "[etcd.tls.generated]\n",
                "etcd.tls.generated",
                "set snapshot.store",
            ),
            (
                "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n[etcd.tls.generated]\n[etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\n",
                "etcd.tls.generated",
                "remove [etcd.tls.client]",
            ),
            (
                "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n[etcd.tls.generated]\nvalidity = \"2h\"\nrenew_before = \"2h\"\n",
                "etcd.tls.generated.renew_before",
                "not shorter than validity",
            ),
            (
                "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n[etcd.tls.generated]\nvalidity = \"10m\"\nrenew_before = \"1m\"\n",
                "etcd.tls.generated.validity",
                "",
            ),
            (
                "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n[etcd.tls.generated]\nextra_names = [\"no spaces\"]\n",
                "etcd.tls.generated.extra_names[0]",
                "not an IP address or a DNS name",
            ),
        ] {
            let e = error_of(extra);
            assert!(e.contains(key) && e.contains(what), "{key} / {what}: {e}");
        }
    }

    #[test]
    fn tls_files_make_the_surfaces_https_and_resolve_relative_paths() {
        let c = parse_str(
            &format!(
                "{BASE}[etcd.tls.client]\ncert_file = \"tls/s.crt\"\nkey_file = \"tls/s.key\"\ntrusted_ca_file = \"/ca/ca.crt\"\n\
                 [etcd.tls.peer]\ncert_file = \"p.crt\"\nkey_file = \"p.key\"\ntrusted_ca_file = \"ca.crt\"\nclient_cert_auth = false\n\
                 [etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\n"
            ),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .unwrap();
        assert_eq!(c.etcd.effective_client_scheme(), super::Scheme::Https);
        assert_eq!(c.etcd.effective_peer_scheme(), super::Scheme::Https);
        let client = c.etcd.tls.client.as_ref().unwrap();
        assert_eq!(client.cert_file, Path::new("/x/tls/s.crt"));
        assert_eq!(client.trusted_ca_file, Path::new("/ca/ca.crt"));
        assert!(client.client_cert_auth, "client certificates by default");
        assert!(!c.etcd.tls.peer.as_ref().unwrap().client_cert_auth);
        assert_eq!(
            c.etcd.tls.eco.as_ref().unwrap().key_file,
            Path::new("/x/e.key")
        );
        let secrets: Vec<String> = c
            .etcd
            .tls
            .files()
            .into_iter()
            .filter(|(_, _, secret)| *secret)
            .map(|(key, _, _)| key)
            .collect();
        assert_eq!(
            secrets,
            [
                "etcd.tls.client.key_file",
                "etcd.tls.peer.key_file",
                "etcd.tls.eco.key_file"
            ]
        );
        let plain = parse_str(BASE, Path::new("/x/eco.toml"), Path::new("/x")).unwrap();
        assert_eq!(plain.etcd.effective_client_scheme(), super::Scheme::Http);
        assert_eq!(plain.etcd.effective_peer_scheme(), super::Scheme::Http);
    }

    #[test]
    fn snapshot_s3_rules() {
        let s3 = |keys: &str| format!("[snapshot]\nstore = \"s3\"\n[snapshot.s3]\n{keys}\n");
        let ok = parse_str(
            &format!(
                "{BASE}{}",
                s3("bucket = \"eco-snapshots.prod-1\"\nprefix = \"eco/prod\"\nregion = \"eu-west-3\"\nendpoint = \"http://127.0.0.1:9000\"\nencryption = \"aws:kms\"\nkms_key_id = \"alias/eco\"\npart_size = 5242880\nparts_in_flight = 16")
            ),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .unwrap();
        let got = ok.snapshot.s3.unwrap();
        assert_eq!(
            (got.bucket.as_str(), got.prefix.as_str()),
            ("eco-snapshots.prod-1", "eco/prod")
        );
        let defaults = parse_str(
            &format!("{BASE}{}", s3("bucket = \"b-1\"")),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .unwrap()
        .snapshot
        .s3
        .unwrap();
        assert_eq!(
            (
                defaults.prefix.as_str(),
                defaults.part_size,
                defaults.parts_in_flight
            ),
            ("eco", 8 * 1024 * 1024, 2)
        );
        let cases: &[(&str, &str, &str)] = &[
            ("bucket = \"ab\"", "snapshot.s3.bucket", "3 to 63"),
            ("bucket = \"Upper\"", "snapshot.s3.bucket", "lowercase"),
            (
                "bucket = \"under_score\"",
                "snapshot.s3.bucket",
                "lowercase",
            ),
            ("bucket = \"-dash\"", "snapshot.s3.bucket", "start and end"),
            (
                "bucket = \"a..b\"",
                "snapshot.s3.bucket",
                "adjacent periods",
            ),
            (
                "bucket = \"192.168.1.1\"",
                "snapshot.s3.bucket",
                "IP address",
            ),
            ("bucket = \"xn--bucket\"", "snapshot.s3.bucket", "reserves"),
            (
                "bucket = \"b-1\"\nprefix = \"/eco\"",
                "snapshot.s3.prefix",
                "no leading or trailing",
            ),
            (
                "bucket = \"b-1\"\nprefix = \"eco/\"",
                "snapshot.s3.prefix",
                "no leading or trailing",
            ),
            (
                "bucket = \"b-1\"\nprefix = \"\"",
                "snapshot.s3.prefix",
                "1 to 256",
            ),
            (
                "bucket = \"b-1\"\nprefix = \"a//b\"",
                "snapshot.s3.prefix",
                "empty",
            ),
            (
                "bucket = \"b-1\"\nprefix = \"a/.hidden\"",
                "snapshot.s3.prefix",
                "starting with '.'",
            ),
            (
                "bucket = \"b-1\"\nprefix = \"sp ace\"",
                "snapshot.s3.prefix",
                "letters, digits",
            ),
            (
                "bucket = \"b-1\"\nregion = \"EU West\"",
                "snapshot.s3.region",
                "not a region",
            ),
            (
                "bucket = \"b-1\"\nendpoint = \"s3.example.com\"",
                "snapshot.s3.endpoint",
                "http(s) URL",
            ),
            (
                "bucket = \"b-1\"\nendpoint = \"http://\"",
                "snapshot.s3.endpoint",
                "http(s) URL",
            ),
            (
                "bucket = \"b-1\"\nkms_key_id = \"alias/x\"",
                "snapshot.s3.kms_key_id",
                "only used with encryption = \"aws:kms\"",
            ),
            (
                "bucket = \"b-1\"\nencryption = \"aws:kms\"\nkms_key_id = \" \"",
                "snapshot.s3.kms_key_id",
                "is empty",
            ),
            (
                "bucket = \"b-1\"\nencryption = \"des\"",
                "encryption",
                "unknown variant `des`",
            ),
            (
                "bucket = \"b-1\"\npart_size = 5242879",
                "snapshot.s3.part_size",
                "5 MiB (5242880) to 5 GiB",
            ),
            (
                "bucket = \"b-1\"\npart_size = 5368709121",
                "snapshot.s3.part_size",
                "5 MiB (5242880) to 5 GiB",
            ),
            (
                "bucket = \"b-1\"\nparts_in_flight = 0",
                "snapshot.s3.parts_in_flight",
                "1 to 16",
            ),
            (
                "bucket = \"b-1\"\nparts_in_flight = 17",
                "snapshot.s3.parts_in_flight",
                "1 to 16",
            ),
            (
                "bucket = \"b-1\"\ncall_timeout = \"10ms\"",
                "snapshot.s3.call_timeout",
                "at least 100ms",
            ),
            (
                "bucket = \"b-1\"\ntransfer_timeout = \"10ms\"",
                "snapshot.s3.transfer_timeout",
                "at least 1s",
            ),
            (
                "bucket = \"b-1\"\nmax_attempts = 0",
                "snapshot.s3.max_attempts",
                "1 to 10",
            ),
            ("prefix = \"eco\"", "bucket", "missing field `bucket`"),
            (
                "bucket = \"b-1\"\nsecret = \"x\"",
                "secret",
                "unknown field",
            ),
        ];
        for (keys, key, message) in cases {
            let err = error_of(&s3(keys));
            assert!(err.contains(key), "key {key} missing from:\n{err}");
            assert!(
                err.contains(message),
                "message {message:?} missing from:\n{err}"
            );
        }
        let err = error_of(
            "[snapshot]\nstore = \"dir\"\n[snapshot.dir]\npath = \"/s\"\n[snapshot.s3]\nbucket = \"b-1\"\n",
        );
        assert!(
            err.contains("snapshot.s3") && err.contains("is not \"s3\""),
            "{err}"
        );
    }

    #[test]
    fn every_rule_has_a_failing_case() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "[etcd]\nclient_port = 0\n",
                "etcd.client_port",
                "allowed: 1 to 65535",
            ),
            (
                "[etcd]\npeer_port = 70000\n",
                "etcd.peer_port",
                "allowed: 1 to 65535",
            ),
            (
                "[etcd]\nmetrics_port = 2379\n",
                "etcd.metrics_port",
                "already used by `etcd.client_port`",
            ),
            (
                "[api]\nport = 2380\n",
                "api.port",
                "already used by `etcd.peer_port`",
            ),
            ("[gossip]\nport = 0\n", "gossip.port", "allowed: 1 to 65535"),
            (
                "[etcd]\nclient_scheme = \"https\"\n",
                "etcd.client_scheme",
                "needs [etcd.tls.client]",
            ),
            (
                "[etcd]\npeer_scheme = \"https\"\n",
                "etcd.peer_scheme",
                "needs [etcd.tls.peer]",
            ),
            (
                "[etcd]\npeer_scheme = \"http\"\n[etcd.tls.peer]\ncert_file = \"p.crt\"\nkey_file = \"p.key\"\ntrusted_ca_file = \"ca.crt\"\n",
                "etcd.peer_scheme",
                "set \"https\" or leave the key out",
            ),
            (
                "[etcd.tls.client]\ncert_file = \"s.crt\"\nkey_file = \"s.key\"\ntrusted_ca_file = \"ca.crt\"\n",
                "etcd.tls.eco",
                "eco needs its own client certificate",
            ),
            (
                "[etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\n",
                "etcd.tls.eco",
                "set [etcd.tls.client] too",
            ),
            (
                "[etcd.tls.client]\ncert_file = \"\"\nkey_file = \"s.key\"\ntrusted_ca_file = \"ca.crt\"\nclient_cert_auth = false\n",
                "etcd.tls.client.cert_file",
                "an empty path",
            ),
            (
                "[etcd]\nquota_backend_bytes = 5\n",
                "etcd.quota_backend_bytes",
                "allowed: 16 MiB",
            ),
            (
                "[etcd.defrag]\nmin_ratio = 1.5\n",
                "etcd.defrag.min_ratio",
                "at most 1",
            ),
            (
                "[etcd.defrag]\ntimeout = \"1s\"\n",
                "etcd.defrag.timeout",
                "at least",
            ),
            (
                "[etcd]\nauto_compaction_retention = \"lots\"\n",
                "etcd.auto_compaction_retention",
                "not a duration",
            ),
            (
                "[etcd]\nauto_compaction_mode = \"revision\"\nauto_compaction_retention = \"1h\"\n",
                "etcd.auto_compaction_retention",
                "whole number",
            ),
            (
                "[etcd]\nheartbeat_interval = \"1ms\"\n",
                "etcd.heartbeat_interval",
                "at least 10ms",
            ),
            (
                "[etcd]\nelection_timeout = \"200ms\"\n",
                "etcd.election_timeout",
                "at least 5 heartbeat",
            ),
            (
                "[etcd]\nelection_timeout = \"60s\"\n[recovery]\nquorum_loss_timeout = \"30m\"\nunhealthy_member_ttl=\"30m\"\n",
                "etcd.election_timeout",
                "at most 50s",
            ),
            (
                "[etcd]\nextra_flags = [\"--data-dir=/tmp\"]\n",
                "etcd.extra_flags[0]",
                "set by eco itself",
            ),
            (
                "[etcd]\nextra_flags = [\"snapshot-count=5\"]\n",
                "etcd.extra_flags[0]",
                "is not a flag",
            ),
            (
                "[etcd]\nstop_timeout = \"1ms\"\n",
                "etcd.stop_timeout",
                "at least 100ms",
            ),
            (
                "[etcd]\nrestart_backoff_initial = \"1ms\"\n",
                "etcd.restart_backoff_initial",
                "at least 10ms",
            ),
            (
                "[etcd]\nrestart_backoff_initial = \"2s\"\nrestart_backoff_max = \"1s\"\n",
                "etcd.restart_backoff_max",
                "at least restart_backoff_initial",
            ),
            (
                "[etcd]\ncall_timeout = \"10ms\"\n",
                "etcd.call_timeout",
                "at least 100ms",
            ),
            (
                "[etcd]\ncall_timeout = \"1h\"\n",
                "etcd.call_timeout",
                "at most 5m",
            ),
            (
                "[etcd]\nprobe_interval = \"1ms\"\n",
                "etcd.probe_interval",
                "at least 100ms",
            ),
            (
                "[etcd]\nkeep_moved_aside = 0\n",
                "etcd.keep_moved_aside",
                "1 or more",
            ),
            (
                "[gossip]\nbind = \"127.0.0.1:0\"\n",
                "gossip.bind",
                "fixed port",
            ),
            (
                "[gossip]\nbind = \"not-an-address\"\n",
                "bind",
                "invalid socket address",
            ),
            ("[api]\nbind = \"127.0.0.1:0\"\n", "api.bind", "fixed port"),
            (
                "[snapshot]\nstore = \"dir\"\n",
                "snapshot.dir",
                "required when snapshot.store",
            ),
            (
                "[snapshot]\n[snapshot.dir]\npath = \"/s\"\n",
                "snapshot.dir",
                "is not \"dir\"",
            ),
            (
                "[snapshot]\nstore = \"s3\"\n",
                "snapshot.s3",
                "required when snapshot.store = \"s3\"",
            ),
            (
                "[snapshot]\ninterval = \"1s\"\n",
                "snapshot.interval",
                "at least 10s",
            ),
            (
                "[snapshot]\ninterval = \"2h\"\nmax_age = \"1h\"\n",
                "snapshot.max_age",
                "at least the interval",
            ),
            (
                "[snapshot]\nkeep_last = 0\n",
                "snapshot.keep_last",
                "1 or more",
            ),
            (
                "[recovery]\nquorum_loss_timeout = \"5s\"\n",
                "recovery.quorum_loss_timeout",
                "20 election timeouts",
            ),
            (
                "[etcd]\nprobe_interval = \"30s\"\ncall_timeout = \"20s\"\n",
                "recovery.quorum_loss_timeout",
                "shorter than one pass",
            ),
            (
                "[recovery]\nunhealthy_member_ttl = \"2s\"\n",
                "recovery.unhealthy_member_ttl",
                "10 election timeouts",
            ),
            (
                "[recovery]\nlearner_timeout = \"1ms\"\n",
                "recovery.learner_timeout",
                "at least 1s",
            ),
            (
                "[recovery]\naccept_loss_after = \"10s\"\n",
                "recovery.accept_loss_after",
                "at least quorum_loss_timeout",
            ),
            (
                "[recovery]\nbootstrap_from = \"snap-1\"\n",
                "recovery.bootstrap_from",
                "needs a snapshot store",
            ),
            ("[log]\nlevel = \"loud[\"\n", "log.level", "not a log level"),
            (
                "[log]\nlevel = \"warning\"\n",
                "log.level",
                "not a log level",
            ),
            ("[log]\nlevel = \"wran\"\n", "log.level", "not a log level"),
            (
                "[log]\nlevel = \"info,eco=loud\"\n",
                "log.level",
                "not a log level",
            ),
            (
                "[etcd]\nheartbeat_interval = \"200000000000y\"\n",
                "heartbeat_interval",
                "too long",
            ),
            (
                "[recovery]\nquorum_loss_timeout = \"18446744073709551616ms\"\n",
                "quorum_loss_timeout",
                "not a duration",
            ),
            (
                "[log]\nformat = \"xml\"\n",
                "format",
                "unknown variant `xml`",
            ),
        ];
        for (extra, key, message) in cases {
            let err = error_of(extra);
            assert!(err.contains(key), "key {key} missing from:\n{err}");
            assert!(
                err.contains(message),
                "message {message:?} missing from:\n{err}"
            );
        }
    }

    #[test]
    fn cluster_name_and_provider_rules() {
        let bad_name = BASE.replace("name = \"c1\"", "name = \"Bad_Name\"");
        let err = parse_str(&bad_name, Path::new("/x/eco.toml"), Path::new("/x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cluster.name") && err.contains("lowercase"),
            "{err}"
        );

        let no_table = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n";
        let err = parse_str(no_table, Path::new("/x/eco.toml"), Path::new("/x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("provider.static") && err.contains("required"),
            "{err}"
        );

        // The AWS provider needs no table: every key has a default.
        let aws = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"aws\"\n";
        let c = parse_str(aws, Path::new("/x/eco.toml"), Path::new("/x")).unwrap();
        assert_eq!(c.provider.kind, crate::config::ProviderKind::Aws);
        for (extra, key) in [
            (
                "[provider.aws]\nregion = \"Not A Region\"\n",
                "provider.aws.region",
            ),
            (
                "[provider.aws]\nendpoint = \"localhost:5000\"\n",
                "provider.aws.endpoint",
            ),
            (
                "[provider.aws]\nmax_attempts = 0\n",
                "provider.aws.max_attempts",
            ),
            (
                "[provider.aws]\ngroup_name = \"\"\n",
                "provider.aws.group_name",
            ),
            (
                "[provider.aws]\nrefresh_interval = \"10ms\"\n",
                "provider.aws.refresh_interval",
            ),
            (
                "[provider.static]\ngroup_file = \"g.toml\"\n",
                "provider.static",
            ),
        ] {
            let err = parse_str(
                &format!("{aws}{extra}"),
                Path::new("/x/eco.toml"),
                Path::new("/x"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
        let err = error_of("[provider.aws]\n");
        assert!(
            err.contains("provider.aws") && err.contains("is not"),
            "{err}"
        );

        let bad_id = format!("{BASE}instance_id = \"a b\"\n");
        let err = parse_str(&bad_id, Path::new("/x/eco.toml"), Path::new("/x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("provider.static.instance_id"), "{err}");
    }

    #[test]
    fn log_levels_and_filters_that_name_a_level_are_accepted() {
        for level in [
            "warn",
            "ERROR",
            "info,eco=debug",
            "eco::daemon=trace,info",
            "off",
        ] {
            assert_eq!(super::check_log_level(level), Ok(()), "{level}");
        }
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let err = error_of("[etcd]\nclient_port = 0\npeer_port = 0\n");
        assert!(
            err.contains("etcd.client_port") && err.contains("etcd.peer_port"),
            "{err}"
        );
    }

    #[test]
    fn the_statefulset_provider_needs_a_service_and_one_desired_size() {
        let sts = |table: &str| {
            format!("[cluster]\nname = \"c1\"\n[provider]\nkind = \"statefulset\"\n{table}")
        };
        let parse = |text: String| parse_str(&text, Path::new("/x/eco.toml"), Path::new("/x"));
        let c = parse(sts(
            "[provider.statefulset]\nservice = \"eco-headless\"\nreplicas_file = \"replicas/replicas\"\n",
        ))
        .unwrap();
        let s = c.provider.statefulset.unwrap();
        assert_eq!(s.replicas_file.unwrap(), Path::new("/x/replicas/replicas"));
        assert_eq!(s.cluster_domain, "cluster.local");
        let table: &[(&str, &[&str])] = &[
            ("", &["provider.statefulset", "the table is required"]),
            (
                "[provider.statefulset]\nservice = \"s\"\n",
                &["provider.statefulset.replicas", "desired size is required"],
            ),
            (
                "[provider.statefulset]\nservice = \"s\"\nreplicas = 3\nreplicas_file = \"r\"\n",
                &["both `replicas` and `replicas_file`"],
            ),
            (
                "[provider.statefulset]\nservice = \"s\"\nreplicas = 0\n",
                &["0 is out of range"],
            ),
            (
                "[provider.statefulset]\nservice = \"s\"\nreplicas = 4294967295\n",
                &["4294967295 is out of range; allowed: 1 to 9"],
            ),
            (
                "[provider.statefulset]\nservice = \"Eco_Svc\"\nreplicas = 3\n",
                &[
                    "provider.statefulset.service",
                    "\"Eco_Svc\" is not a service name",
                ],
            ),
            (
                "[provider.statefulset]\nservice = \"s\"\nreplicas = 3\nnamespace = \"-x\"\ncluster_domain = \"a..b\"\nset = \"S\"\n",
                &[
                    "provider.statefulset.namespace",
                    "provider.statefulset.cluster_domain",
                    "provider.statefulset.set",
                ],
            ),
            (
                "[provider.statefulset]\nservice = \"s\"\nreplicas = 3\nreplica = 4\n",
                &["replica"],
            ),
        ];
        for (table, wants) in table {
            let err = parse(sts(table))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            for want in *wants {
                assert!(err.contains(want), "{table:?}: want {want:?} in {err}");
            }
        }
        let mixed = error_of("[provider.statefulset]\nservice = \"s\"\nreplicas = 3\n");
        assert!(
            mixed.contains("provider.kind is not \"statefulset\""),
            "{mixed}"
        );
    }

    #[test]
    fn lowered_timeouts_for_loopback_tests_are_accepted_together() {
        let ok = format!(
            "{BASE}[etcd]\nheartbeat_interval = \"50ms\"\nelection_timeout = \"250ms\"\nprobe_interval = \"300ms\"\ncall_timeout = \"2s\"\n[recovery]\nquorum_loss_timeout = \"5s\"\nunhealthy_member_ttl = \"5s\"\n"
        );
        parse_str(&ok, Path::new("/x/eco.toml"), Path::new("/x")).unwrap();
    }
}
