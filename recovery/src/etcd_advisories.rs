//! What the etcd project says about the release eco runs: known data-loss
//! or inconsistency bugs, the end of a series' support, and the release a
//! later upgrade must start from. One table, from etcd's own changelogs,
//! post-mortems and upgrade guides (as of 2026-08; the source of each row
//! is named with it); eco warns for every row that matches (log,
//! `/status`, `eco config check`, `eco_etcd_advisory`, the alert
//! `EcoEtcdVersionUnsafe` for the data rows).
//!
//! Pure: a version in, the advisories that apply out. What it does not do:
//! know about releases newer than the table, or refuse to run anything
//! (an operator may have reasons; eco says what it knows).

use crate::etcd_version::Version;
use serde::{Deserialize, Serialize};

/// How serious an advisory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A later upgrade must go through a newer release first.
    UpgradePath,
    /// The series gets no more fixes.
    EndOfLife,
    /// Acknowledged writes can be lost, or members can diverge.
    DataLoss,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::UpgradePath => "upgrade_path",
            Severity::EndOfLife => "end_of_life",
            Severity::DataLoss => "data_loss",
        }
    }

    pub const ALL: [Severity; 3] = [
        Severity::DataLoss,
        Severity::EndOfLife,
        Severity::UpgradePath,
    ];
}

/// One row: releases `from..=to` (inclusive) are affected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Row {
    from: Version,
    to: Version,
    severity: Severity,
    /// What is wrong and what to run instead.
    what: &'static str,
    /// Where etcd says so.
    source: &'static str,
}

const fn v(major: u32, minor: u32, patch: u32) -> Version {
    Version::new(major, minor, patch)
}

const TABLE: &[Row] = &[
    Row {
        from: v(3, 5, 0),
        to: v(3, 5, 2),
        severity: Severity::DataLoss,
        what: "committed writes can be missing on a member after a crash under load (the v3.5 data inconsistency); run 3.5.6 or later",
        source: "etcd Documentation/postmortems/v3.5-data-inconsistency.md; CHANGELOG-3.5 v3.5.3",
    },
    Row {
        from: v(3, 5, 0),
        to: v(3, 5, 4),
        severity: Severity::DataLoss,
        what: "a one-member cluster can lose an acknowledged write if etcd crashes right after answering (etcd#14370); run 3.5.6 or later",
        source: "CHANGELOG-3.5 v3.5.5",
    },
    Row {
        from: v(3, 5, 0),
        to: v(3, 5, 5),
        severity: Severity::DataLoss,
        what: "a crash during a defragmentation can leave the revision inconsistent, and with authentication on a new member can diverge (etcd#14571); run 3.5.6 or later",
        source: "CHANGELOG-3.5 v3.5.6",
    },
    Row {
        from: v(3, 5, 0),
        to: v(3, 5, 22),
        severity: Severity::DataLoss,
        what: "a member can corrupt its data when it applies a leader's snapshot during a defragmentation (etcd#20653; eco's space governor defragments); run 3.5.23 or later",
        source: "CHANGELOG-3.5 v3.5.23",
    },
    Row {
        from: v(3, 4, 0),
        to: v(3, 4, 20),
        severity: Severity::DataLoss,
        what: "a one-member cluster can lose an acknowledged write if etcd crashes right after answering (etcd#14370); run 3.4.22 or later — better 3.5",
        source: "CHANGELOG-3.4 v3.4.21",
    },
    Row {
        from: v(3, 4, 20),
        to: v(3, 4, 21),
        severity: Severity::DataLoss,
        what: "with authentication on, a new member can diverge through a snapshot (etcd#14571); run 3.4.22 or later — better 3.5",
        source: "CHANGELOG-3.4 v3.4.22",
    },
    Row {
        from: v(3, 4, 0),
        to: v(3, 4, 37),
        severity: Severity::DataLoss,
        what: "a member can corrupt its data when it applies a leader's snapshot during a defragmentation (etcd#20659; eco's space governor defragments); run 3.4.38 or later — better 3.5",
        source: "CHANGELOG-3.4 v3.4.38",
    },
    Row {
        from: v(3, 4, 0),
        to: v(3, 4, u32::MAX),
        severity: Severity::EndOfLife,
        what: "etcd 3.4 is end-of-life (3.4.45, 2026-06, was its last release): roll the cluster to 3.5 (eco's rolling upgrade)",
        source: "CHANGELOG-3.4 v3.4.45",
    },
    Row {
        from: v(3, 5, 0),
        to: v(3, 5, 31),
        severity: Severity::UpgradePath,
        what: "etcd's upgrade guide asks every 3.5 member to run 3.5.32 or later before a move to 3.6 (3.5.26 fixes the zombie members a move would keep)",
        source: "etcd website docs/v3.6/upgrades/upgrade_3_6.md",
    },
];

/// One advisory that applies to a release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advisory {
    pub severity: Severity,
    pub text: String,
    pub source: String,
}

/// The advisories for etcd `version`, most serious first.
pub fn advisories(version: Version) -> Vec<Advisory> {
    let mut out: Vec<Advisory> = TABLE
        .iter()
        .filter(|r| r.from <= version && version <= r.to)
        .map(|r| Advisory {
            severity: r.severity,
            text: format!("etcd {version}: {}", r.what),
            source: r.source.to_string(),
        })
        .collect();
    out.sort_by_key(|a| std::cmp::Reverse(a.severity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(version: &str) -> Vec<Severity> {
        advisories(Version::parse(version).expect("a version"))
            .into_iter()
            .map(|a| a.severity)
            .collect()
    }

    #[test]
    fn table() {
        use Severity::*;
        for (version, want) in [
            (
                "3.5.0",
                vec![DataLoss, DataLoss, DataLoss, DataLoss, UpgradePath],
            ),
            (
                "3.5.1",
                vec![DataLoss, DataLoss, DataLoss, DataLoss, UpgradePath],
            ),
            ("3.5.4", vec![DataLoss, DataLoss, DataLoss, UpgradePath]),
            ("3.5.5", vec![DataLoss, DataLoss, UpgradePath]),
            ("3.5.6", vec![DataLoss, UpgradePath]),
            ("3.5.16", vec![DataLoss, UpgradePath]),
            ("3.5.22", vec![DataLoss, UpgradePath]),
            ("3.5.23", vec![UpgradePath]),
            ("3.5.30", vec![UpgradePath]),
            ("3.5.31", vec![UpgradePath]),
            ("3.5.32", vec![]),
            ("3.5.33", vec![]),
            ("3.4.20", vec![DataLoss, DataLoss, DataLoss, EndOfLife]),
            ("3.4.21", vec![DataLoss, DataLoss, EndOfLife]),
            ("3.4.22", vec![DataLoss, EndOfLife]),
            ("3.4.23", vec![DataLoss, EndOfLife]),
            ("3.4.38", vec![EndOfLife]),
            ("3.4.45", vec![EndOfLife]),
            ("3.6.0", vec![]),
            ("3.3.27", vec![]),
        ] {
            assert_eq!(kinds(version), want, "{version}");
        }
    }

    #[test]
    fn every_advisory_names_the_release_and_its_source() {
        for a in advisories(Version::new(3, 5, 1)) {
            assert!(a.text.starts_with("etcd 3.5.1: "), "{}", a.text);
            assert!(a.text.contains(" or later") || a.severity != Severity::DataLoss);
            assert!(!a.source.is_empty());
        }
    }
}
