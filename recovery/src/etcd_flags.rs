//! Which etcd release accepts which command-line flag: every flag eco
//! itself passes, and the flags etcd removed or renamed between 3.4, 3.5,
//! 3.6 and 3.7 (from each release's flag registrations,
//! `server/etcdmain/config.go` and `server/embed/config.go`, and etcd's
//! upgrade guides). eco passes only flags every supported release accepts
//! (`tests/etcd_versions.rs` holds the table to the `etcd --help` of every
//! release installed here); an operator's `etcd.extra_flags` are checked
//! against the release that will run them: a removed flag makes etcd exit
//! at start (3.6 exits with code 2 on an unknown flag), so eco says so
//! before a step onto that release, and at start.
//!
//! Pure. What it does not know: releases after 3.7, and flags not in the
//! table (accepted: the table lists what changed, not every flag).

use crate::etcd_version::Version;

const fn v(major: u32, minor: u32, patch: u32) -> Version {
    Version::new(major, minor, patch)
}

/// One flag's life: accepted from `since`, deprecated (still accepted)
/// from `deprecated` in favour of `instead`, refused from `removed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagLife {
    pub name: &'static str,
    pub since: Version,
    pub deprecated: Option<Version>,
    pub removed: Option<Version>,
    pub instead: Option<&'static str>,
}

const fn always(name: &'static str) -> FlagLife {
    FlagLife {
        name,
        since: v(3, 0, 0),
        deprecated: None,
        removed: None,
        instead: None,
    }
}

const fn removed(name: &'static str, at: Version, instead: Option<&'static str>) -> FlagLife {
    FlagLife {
        name,
        since: v(3, 0, 0),
        deprecated: None,
        removed: Some(at),
        instead,
    }
}

const fn renamed_in_3_6(name: &'static str, instead: &'static str) -> FlagLife {
    FlagLife {
        name,
        since: v(3, 0, 0),
        deprecated: Some(v(3, 6, 0)),
        removed: Some(v(3, 7, 0)),
        instead: Some(instead),
    }
}

/// Every flag `etcd/flags.rs` passes to etcd (its member and the
/// throwaway etcds of seeding, replay and verification).
pub const ECO_FLAGS: &[&str] = &[
    "name",
    "data-dir",
    "listen-client-urls",
    "advertise-client-urls",
    "listen-peer-urls",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "listen-metrics-urls",
    "quota-backend-bytes",
    "auto-compaction-mode",
    "auto-compaction-retention",
    "heartbeat-interval",
    "election-timeout",
    "logger",
    "log-outputs",
    "auth-token",
    "cert-file",
    "key-file",
    "trusted-ca-file",
    "client-cert-auth",
    "peer-cert-file",
    "peer-key-file",
    "peer-trusted-ca-file",
    "peer-client-cert-auth",
    "force-new-cluster",
];

/// Flags eco passes only to the releases [`TABLE`] says accept them
/// ([`eco_passes`]): `--listen-client-http-urls` (etcd ≥ 3.5.8), which
/// serves etcd's HTTP endpoints apart from gRPC.
pub const ECO_VERSIONED_FLAGS: &[&str] = &["listen-client-http-urls"];

/// Whether eco passes its versioned flag `name` ([`ECO_VERSIONED_FLAGS`])
/// to etcd `release`.
pub fn eco_passes(name: &str, release: Version) -> bool {
    ECO_VERSIONED_FLAGS.contains(&name) && acceptance(name, release) == Acceptance::Accepted
}

/// Flags eco does not pass but reserves all the same: where the WAL
/// lives, other ways to find or configure a cluster, and certificates
/// etcd would make for itself.
pub const RESERVED_FLAGS: &[&str] = &[
    "wal-dir",
    "discovery",
    "discovery-srv",
    "discovery-srv-name",
    "discovery-proxy",
    "discovery-fallback",
    "config-file",
    "auto-tls",
    "peer-auto-tls",
];

/// Whether `flag` (a name without its dashes) is eco's own: it passes it
/// ([`ECO_FLAGS`]) or reserves it ([`RESERVED_FLAGS`]), so
/// `etcd.extra_flags` may not set it.
pub fn owned_by_eco(flag: &str) -> bool {
    ECO_FLAGS.contains(&flag)
        || ECO_VERSIONED_FLAGS.contains(&flag)
        || RESERVED_FLAGS.contains(&flag)
}

/// The flags whose life is not "every release since 3.0".
pub const TABLE: &[FlagLife] = &[
    // Removed in 3.5 (present in 3.4.45).
    removed("log-package-levels", v(3, 5, 0), Some("log-level")),
    removed("debug", v(3, 5, 0), Some("log-level=debug")),
    removed("experimental-backend-bbolt-freelist-type", v(3, 5, 0), None),
    // Removed in 3.6 (present in 3.5.33).
    removed("enable-v2", v(3, 6, 0), None),
    removed("experimental-enable-v2v3", v(3, 6, 0), None),
    removed("proxy", v(3, 6, 0), None),
    removed("proxy-dial-timeout", v(3, 6, 0), None),
    removed("proxy-failure-wait", v(3, 6, 0), None),
    removed("proxy-read-timeout", v(3, 6, 0), None),
    removed("proxy-refresh-interval", v(3, 6, 0), None),
    removed("proxy-write-timeout", v(3, 6, 0), None),
    // Renamed in 3.6 (the old name deprecated, gone in 3.7).
    renamed_in_3_6(
        "experimental-compaction-batch-limit",
        "compaction-batch-limit",
    ),
    renamed_in_3_6("experimental-corrupt-check-time", "corrupt-check-time"),
    renamed_in_3_6(
        "experimental-warning-apply-duration",
        "warning-apply-duration",
    ),
    renamed_in_3_6(
        "experimental-watch-progress-notify-interval",
        "watch-progress-notify-interval",
    ),
    FlagLife {
        name: "experimental-memory-mlock",
        since: v(3, 5, 0),
        deprecated: Some(v(3, 6, 0)),
        removed: Some(v(3, 7, 0)),
        instead: Some("memory-mlock"),
    },
    renamed_in_3_6(
        "experimental-peer-skip-client-san-verification",
        "peer-skip-client-san-verification",
    ),
    renamed_in_3_6(
        "experimental-initial-corrupt-check",
        "feature-gates=InitialCorruptCheck=true",
    ),
    FlagLife {
        name: "experimental-compact-hash-check-enabled",
        since: v(3, 5, 5),
        deprecated: Some(v(3, 6, 0)),
        removed: Some(v(3, 7, 0)),
        instead: Some("feature-gates=CompactHashCheck=true"),
    },
    // New in 3.5 (eco passes it to its throwaway members only).
    FlagLife {
        name: "unsafe-no-fsync",
        since: v(3, 5, 0),
        deprecated: None,
        removed: None,
        instead: None,
    },
    // New in 3.5.8: HTTP apart from gRPC on the client surface.
    FlagLife {
        name: "listen-client-http-urls",
        since: v(3, 5, 8),
        deprecated: None,
        removed: None,
        instead: None,
    },
    // New in 3.6.
    FlagLife {
        name: "max-learners",
        since: v(3, 6, 0),
        deprecated: None,
        removed: None,
        instead: None,
    },
    FlagLife {
        name: "feature-gates",
        since: v(3, 6, 0),
        deprecated: None,
        removed: None,
        instead: None,
    },
];

/// What a release makes of a flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acceptance {
    Accepted,
    /// Accepted, but going away.
    Deprecated {
        reason: String,
    },
    /// etcd exits at start on it.
    Refused {
        reason: String,
    },
}

/// The flag's name in `--name=value`, `--name value` or `-name` form.
pub fn flag_name(arg: &str) -> &str {
    let bare = arg.trim_start_matches('-');
    bare.split('=').next().unwrap_or(bare)
}

/// The life of flag `name`: its row, or "every release" for a flag the
/// table does not list.
pub fn life(name: &str) -> FlagLife {
    TABLE
        .iter()
        .copied()
        .find(|f| f.name == name)
        .unwrap_or(always(""))
}

/// Whether etcd `release` accepts flag `arg` (any form).
pub fn acceptance(arg: &str, release: Version) -> Acceptance {
    let name = flag_name(arg);
    let f = life(name);
    let instead = f
        .instead
        .map(|i| format!("; use --{i}"))
        .unwrap_or_default();
    if release < f.since {
        return Acceptance::Refused {
            reason: format!(
                "etcd {release} has no --{name} (it came in {}){instead}",
                f.since
            ),
        };
    }
    if let Some(at) = f.removed.filter(|at| release >= *at) {
        return Acceptance::Refused {
            reason: format!("etcd {release} has no --{name} (removed in {at}){instead}"),
        };
    }
    if let Some(at) = f.deprecated.filter(|at| release >= *at) {
        return Acceptance::Deprecated {
            reason: format!("--{name} is deprecated since etcd {at}{instead}"),
        };
    }
    Acceptance::Accepted
}

/// The problems of `extra_flags` on etcd `release`: refused ones first,
/// then deprecated ones, each naming the flag.
pub fn problems(extra_flags: &[String], release: Version) -> Vec<Acceptance> {
    let mut out: Vec<Acceptance> = extra_flags
        .iter()
        .map(|a| acceptance(a, release))
        .filter(|a| *a != Acceptance::Accepted)
        .collect();
    out.sort_by_key(|a| !matches!(a, Acceptance::Refused { .. }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Version {
        Version::parse(text).expect("a version")
    }

    #[test]
    fn eco_owns_what_it_passes_and_what_it_reserves_and_nothing_else() {
        for f in ECO_FLAGS.iter().chain(RESERVED_FLAGS) {
            assert!(owned_by_eco(f), "{f}");
        }
        for f in RESERVED_FLAGS {
            assert!(!ECO_FLAGS.contains(f), "{f} is passed, not only reserved");
        }
        for f in ["snapshot-count", "max-request-bytes", "log-level", "wal"] {
            assert!(!owned_by_eco(f), "{f} is the operator's");
        }
    }

    fn kind(a: &Acceptance) -> &'static str {
        match a {
            Acceptance::Accepted => "ok",
            Acceptance::Deprecated { .. } => "deprecated",
            Acceptance::Refused { .. } => "refused",
        }
    }

    #[test]
    fn table() {
        for (arg, release, want) in [
            ("--enable-v2=true", "3.4.23", "ok"),
            ("--enable-v2", "3.5.30", "ok"),
            ("--enable-v2", "3.6.0", "refused"),
            ("--max-learners=2", "3.5.30", "refused"),
            ("--max-learners=2", "3.6.0", "ok"),
            ("--experimental-initial-corrupt-check=true", "3.5.30", "ok"),
            (
                "--experimental-initial-corrupt-check=true",
                "3.6.4",
                "deprecated",
            ),
            (
                "--experimental-initial-corrupt-check=true",
                "3.7.1",
                "refused",
            ),
            (
                "--experimental-compact-hash-check-enabled",
                "3.5.4",
                "refused",
            ),
            ("--experimental-compact-hash-check-enabled", "3.5.5", "ok"),
            ("--log-package-levels=etcdserver=DEBUG", "3.4.23", "ok"),
            ("--log-package-levels=etcdserver=DEBUG", "3.5.1", "refused"),
            ("--snapshot-count=5000", "3.7.1", "ok"),
            ("-proxy=on", "3.6.0", "refused"),
            ("--unsafe-no-fsync", "3.4.23", "refused"),
            ("--unsafe-no-fsync", "3.5.0", "ok"),
            ("--unsafe-no-fsync", "3.6.0", "ok"),
        ] {
            assert_eq!(
                kind(&acceptance(arg, r(release))),
                want,
                "{arg} on {release}"
            );
        }
    }

    #[test]
    fn the_separate_http_listener_is_passed_from_3_5_8_on() {
        for (release, passed) in [
            ("3.4.23", false),
            ("3.5.7", false),
            ("3.5.8", true),
            ("3.5.30", true),
            ("3.6.0", true),
        ] {
            assert_eq!(
                eco_passes("listen-client-http-urls", r(release)),
                passed,
                "{release}"
            );
        }
        assert!(!eco_passes("max-learners", r("3.6.0")), "not eco's");
        assert!(owned_by_eco("listen-client-http-urls"));
    }

    #[test]
    fn eco_passes_only_flags_every_supported_release_accepts() {
        for release in ["3.4.0", "3.5.0", "3.5.30", "3.6.0", "3.7.1"] {
            for flag in ECO_FLAGS {
                assert_eq!(
                    acceptance(flag, r(release)),
                    Acceptance::Accepted,
                    "--{flag} on {release}"
                );
            }
        }
    }

    #[test]
    fn problems_name_the_flag_and_what_to_use() {
        let p = problems(
            &[
                "--snapshot-count=10".into(),
                "--experimental-corrupt-check-time=5m".into(),
                "--enable-v2".into(),
            ],
            r("3.6.0"),
        );
        assert_eq!(p.len(), 2);
        match &p[0] {
            Acceptance::Refused { reason } => assert!(
                reason.contains("--enable-v2") && reason.contains("removed in 3.6.0"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        match &p[1] {
            Acceptance::Deprecated { reason } => {
                assert!(reason.contains("use --corrupt-check-time"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}
