//! Checks serde cannot do: ranges, cross-key rules, provider requirements.
//! Every problem names the key, says what is wrong and what is allowed.
//!
//! Each section checks itself (`problems()` on `[provider]`, `[etcd]`,
//! `[gossip]`, `[api]`, `[api.tls]`, `[snapshot]`, `[recovery]`, `[log]`,
//! one file each); [`validate`] runs them and keeps only the rules that
//! span sections: the cluster's name, `[etcd.tls]` against the snapshot
//! store, every TCP listener on its own port, the quorum-loss timings
//! against etcd's, a bootstrap snapshot needing a store, `[auth]` against
//! etcd's TLS files.

mod api;
mod archive;
mod cloud_stores;
mod etcd;
mod gossip;
mod log;
mod provider;
mod recovery;
mod snapshot;

use super::{Config, ConfigDuration, EtcdConfig, SnapshotStoreKind};
use ::recovery::fenced::{ProtocolConfig, Setting, WatchedTiming};
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
            if crate::base::names::Host::parse(name).is_err() {
                ck.fail(
                    &format!("etcd.tls.generated.extra_names[{i}]"),
                    format!("{name:?} is not an IP address or a DNS name"),
                );
            }
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

#[derive(Default)]
pub(super) struct Checker {
    pub(super) problems: Vec<Problem>,
}

impl Checker {
    pub(super) fn fail(&mut self, key: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            key: key.to_string(),
            message: message.into(),
        });
    }

    pub(super) fn port(&mut self, key: &str, value: u32) {
        if !(1..=65535).contains(&value) {
            self.fail(key, format!("{value} is not a port; allowed: 1 to 65535"));
        }
    }

    pub(super) fn at_least(&mut self, key: &str, value: ConfigDuration, min: Duration) {
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

pub(super) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Returns every problem found; empty means the config is usable.
pub fn validate(c: &Config) -> Vec<Problem> {
    let mut ck = Checker::default();

    if !valid_name(&c.cluster.name) {
        ck.fail(
            "cluster.name",
            format!(
                "{:?} is not a valid cluster name; allowed: 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'",
                c.cluster.name
            ),
        );
    }

    ck.problems.extend(c.provider.problems());

    let e = &c.etcd;
    ck.problems.extend(e.problems());
    tls(&mut ck, e, c.snapshot.store);
    // Every TCP listener on its own port (each port's range is its
    // section's rule).
    // `etcd.client_http_port` equal to `client_port` shares it on purpose.
    let mut ports = vec![
        ("etcd.client_port", e.client_port),
        ("etcd.peer_port", e.peer_port),
        ("etcd.metrics_port", e.metrics_port),
        ("api.port", c.api.port),
    ];
    if e.client_http_port != e.client_port {
        ports.push(("etcd.client_http_port", e.client_http_port));
    }
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
    ck.problems.extend(c.gossip.problems());
    ck.problems.extend(c.api.problems());
    ck.problems.extend(c.api.tls.problems(e));

    let s = &c.snapshot;
    ck.problems.extend(s.problems());
    ck.problems.extend(c.archive.problems());

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
    if let Some(after) = r.replace_unusable_after
        && after.get() < e.election_timeout.get() * 10
    {
        ck.fail(
                "recovery.replace_unusable_after",
                format!("{after} is shorter than 10 election timeouts; an election is not an unusable member; allowed: at least {}", ConfigDuration(e.election_timeout.get() * 10)),
            );
    }
    if r.unhealthy_member_ttl.get() < e.election_timeout.get() * 10 {
        ck.fail(
            "recovery.unhealthy_member_ttl",
            format!("{} is shorter than 10 election timeouts; removing members during an election fights raft; allowed: at least {}", r.unhealthy_member_ttl, ConfigDuration(e.election_timeout.get() * 10)),
        );
    }
    ck.problems.extend(r.problems());
    if r.bootstrap_from
        .as_ref()
        .is_some_and(|name| !name.trim().is_empty())
        && s.store == SnapshotStoreKind::None
    {
        ck.fail(
            "recovery.bootstrap_from",
            "needs a snapshot store; set snapshot.store",
        );
    }

    for (key, message) in super::auth::check(&c.auth, &e.tls_files()) {
        ck.fail(&key, message);
    }

    ck.problems.extend(c.log.problems());

    ck.problems
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
        assert_eq!(
            c.etcd.effective_client_scheme(),
            crate::config::Scheme::Https
        );
        assert_eq!(c.etcd.effective_peer_scheme(), crate::config::Scheme::Https);
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
        assert_eq!(
            c.etcd.effective_client_scheme(),
            crate::config::Scheme::Https
        );
        assert_eq!(c.etcd.effective_peer_scheme(), crate::config::Scheme::Https);
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
        assert_eq!(
            plain.etcd.effective_client_scheme(),
            crate::config::Scheme::Http
        );
        assert_eq!(
            plain.etcd.effective_peer_scheme(),
            crate::config::Scheme::Http
        );
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
                "is no longer a key",
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
            (
                "[etcd]\nclient_http_port = 2381\n",
                "etcd.client_http_port",
                "already used by `etcd.metrics_port`",
            ),
            (
                "[etcd]\nclient_http_port = 0\n",
                "etcd.client_http_port",
                "allowed: 1 to 65535",
            ),
            ("[gossip]\nport = 0\n", "gossip.port", "allowed: 1 to 65535"),
            (
                "[etcd]\nclient_scheme = \"https\"\n",
                "etcd.client_scheme",
                "is no longer a key: the client surface's scheme follows [etcd.tls]",
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
                "refresh_interval = \"500ms\"\n",
                "provider.refresh_interval",
            ),
            (
                "[provider.aws]\nrefresh_interval = \"10s\"\n",
                "provider.aws.refresh_interval",
            ),
            (
                "[provider.aws]\ncall_timeout = \"10s\"\n",
                "provider.aws.call_timeout",
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
            assert_eq!(super::log::check_log_level(level), Ok(()), "{level}");
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
