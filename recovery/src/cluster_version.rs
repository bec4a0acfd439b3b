//! eco's cluster version: which format of its shared data every instance
//! writes while the group runs two releases of eco, and when the newer
//! release's formats are switched on for good (finalized). The model is
//! CockroachDB's cluster version and etcd's own cluster version.
//!
//! A *format* is one number for every format another eco reads (gossip
//! states, the quorum-loss protocol's envelopes, the store's records):
//! format 1 is eco 0.1.0's (no tag anywhere: an untagged message or record
//! is format 1), format 2 is 0.2.0's (tags), format 3 is 0.3.0's
//! (snapshots compressed and encrypted as configured). Formats are only
//! ever added, and each release reads every format back to [`OLDEST`]
//! (stored data outlives releases: a snapshot or record written years ago
//! is read as it was written); two releases run side by side (the
//! policy below). Each instance
//! gossips the newest format it reads; every instance writes the
//! *finalized* format, the newest one recorded in the store's
//! cluster-version records, which starts at 1 (no record). Finalizing to
//! [`NEWEST`] is allowed only while every instance of the group reads it,
//! on `eco upgrade finalize` or by itself once every instance has read it
//! for `upgrade.finalize_after`. Until then every instance may still be
//! replaced by the previous release (going back); after it, not.
//!
//! The version-skew policy, enforced here: two releases run together (N-1
//! and N); a cluster finalized at a format this build does not read
//! refuses it at start ([`admit`]: it is more than one release behind), as
//! does a cluster still at a format older than this build's oldest (it
//! skipped a release). What this module does not do: read the store or
//! gossip (the daemon passes what they said), or encode anything.

use std::collections::BTreeMap;

/// One format number (see the module's documentation).
pub type Format = u16;

/// The newest format this build reads and writes once finalized.
pub const NEWEST: Format = 3;
/// The oldest format this build reads: the first (nothing eco ever wrote
/// stops being readable; the objects of a store outlive releases).
pub const OLDEST: Format = 1;
/// The format of a message or record that carries no tag (eco 0.1.0's).
pub const UNTAGGED: Format = 1;

/// [`UNTAGGED`], for serde's `default` of a format field.
pub fn untagged() -> Format {
    UNTAGGED
}

/// Whether this build reads `format`.
pub fn reads(format: Format) -> bool {
    (OLDEST..=NEWEST).contains(&format)
}

/// Whether this build reads a format recorded as any unsigned number (one
/// beyond the format type is a later format, not read).
pub fn reads_number(recorded: u64) -> bool {
    Format::try_from(recorded).is_ok_and(reads)
}

/// Why a recorded format is not one this build reads, `None` when it is:
/// `recorded` is the number the record holds, if it holds one, `shown`
/// what it holds, as the message quotes it. One message for every reader
/// of a format key.
pub fn unreadable(recorded: Option<u64>, shown: &str) -> Option<String> {
    (!recorded.is_some_and(reads_number)).then(|| {
        format!(
            "it is written in format {shown}, which this eco does not read (it reads {OLDEST} to {NEWEST}): a newer eco wrote it"
        )
    })
}

/// What the assessment needs, gathered by the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The instances of the group (the provider's list).
    pub group: Vec<String>,
    /// The newest format each instance reads, as gossip last said (this
    /// instance's own included); an instance gossip has not heard from is
    /// absent.
    pub reads: BTreeMap<String, Format>,
    /// The newest format the store's cluster-version records finalized
    /// ([`UNTAGGED`] when there is none).
    pub finalized: Format,
    /// An operator asked to finalize (`eco upgrade finalize`) to this
    /// format.
    pub requested: Option<Format>,
    /// Finalize by itself once every instance has read [`NEWEST`] this
    /// long (ms); `None`: only on request.
    pub finalize_after_ms: Option<u64>,
    /// Since when every instance has read [`NEWEST`] (the previous
    /// assessment's answer; `None` at start).
    pub all_newest_since_ms: Option<u64>,
    /// This instance formed the cluster (it created incarnation 1) and,
    /// since, every instance of the group has read [`NEWEST`]: no earlier
    /// release ever ran it, so there is nothing to go back to and it is
    /// finalized at once (a new cluster's snapshots are compressed from
    /// the start).
    pub new_cluster: bool,
    pub now_ms: u64,
}

/// An instance of the group that does not read [`NEWEST`] yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behind {
    pub instance: String,
    /// The newest format it reads; `None`: gossip has not heard from it.
    pub reads: Option<Format>,
}

/// What happens next to the cluster version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Finalized at [`NEWEST`]: nothing to do.
    Current,
    /// Record the finalization of `to` now (a conditional create: several
    /// instances may try, one record results).
    Finalize { to: Format },
    /// Finalizing waits for the instances in [`Assessment::behind`].
    WaitsForInstances { to: Format },
    /// Every instance reads `to`; it finalizes by itself at `at_ms`.
    FinalizesAt { to: Format, at_ms: u64 },
    /// Every instance reads `to`; only `eco upgrade finalize` finalizes it.
    WaitsForOperator { to: Format },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assessment {
    /// The format every message and record this instance writes is in.
    pub writing: Format,
    pub finalized: Format,
    /// Carried into the next assessment's facts.
    pub all_newest_since_ms: Option<u64>,
    /// The group's instances that do not read [`NEWEST`].
    pub behind: Vec<Behind>,
    pub next: Next,
    /// Why, for `eco status` and the logs.
    pub reason: String,
}

/// The cluster version now, and what happens next.
pub fn assess(f: &Facts) -> Assessment {
    let finalized = f.finalized.clamp(OLDEST, NEWEST);
    let behind: Vec<Behind> = f
        .group
        .iter()
        .filter_map(|i| {
            let reads = f.reads.get(i).copied();
            (reads.is_none_or(|r| r < NEWEST)).then(|| Behind {
                instance: i.clone(),
                reads,
            })
        })
        .collect();
    let all_newest = behind.is_empty() && !f.group.is_empty();
    let since = if all_newest {
        Some(f.all_newest_since_ms.unwrap_or(f.now_ms))
    } else {
        None
    };
    let (next, reason) = if finalized >= NEWEST {
        let reason = if behind.is_empty() {
            format!("finalized at format {finalized}: every instance writes it")
        } else {
            format!(
                "finalized at format {finalized}; {} cannot read it (an older eco after finalization: upgrade it)",
                names(&behind)
            )
        };
        (Next::Current, reason)
    } else if !all_newest {
        (
            Next::WaitsForInstances { to: NEWEST },
            format!(
                "writing format {finalized} (the previous release's) until every instance runs a release that reads format {NEWEST}; waiting for {}",
                names(&behind)
            ),
        )
    } else if f.requested.is_some_and(|r| r >= NEWEST) {
        (
            Next::Finalize { to: NEWEST },
            format!("every instance reads format {NEWEST} and an operator asked to finalize"),
        )
    } else if f.new_cluster {
        (
            Next::Finalize { to: NEWEST },
            format!(
                "a new cluster whose every instance reads format {NEWEST}: no earlier release ever ran it"
            ),
        )
    } else {
        match (f.finalize_after_ms, since) {
            (Some(after), Some(s)) if f.now_ms >= s.saturating_add(after) => (
                Next::Finalize { to: NEWEST },
                format!(
                    "every instance has read format {NEWEST} for upgrade.finalize_after ({} s)",
                    after / 1000
                ),
            ),
            (Some(after), Some(s)) => (
                Next::FinalizesAt {
                    to: NEWEST,
                    at_ms: s.saturating_add(after),
                },
                format!(
                    "every instance reads format {NEWEST}; writing format {finalized} so the previous release can still come back, until `eco upgrade finalize` or upgrade.finalize_after ({} s from when the last instance was upgraded)",
                    after / 1000
                ),
            ),
            _ => (
                Next::WaitsForOperator { to: NEWEST },
                format!(
                    "every instance reads format {NEWEST}; writing format {finalized} so the previous release can still come back, until `eco upgrade finalize` (upgrade.finalize_after is off)"
                ),
            ),
        }
    };
    Assessment {
        writing: finalized,
        finalized,
        all_newest_since_ms: since,
        behind,
        next,
        reason,
    }
}

impl Behind {
    /// `eco-1 (reads format 1)`, `eco-3 (not heard in gossip)`.
    pub fn describe(&self) -> String {
        match self.reads {
            Some(r) => format!("{} (reads format {r})", self.instance),
            None => format!("{} (not heard in gossip)", self.instance),
        }
    }
}

fn names(behind: &[Behind]) -> String {
    behind
        .iter()
        .map(Behind::describe)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why this build may not run against a cluster.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "the cluster was finalized at format {finalized}, which this eco does not read (it reads formats {OLDEST} to {NEWEST}): it is more than one release behind the cluster; run the cluster's release or the one before it"
    )]
    Behind { finalized: Format },
    #[error(
        "the cluster is at format {finalized} and this eco reads formats {OLDEST} to {NEWEST}: it skipped a release; upgrade the cluster to the release in between and finalize it first"
    )]
    Ahead { finalized: Format },
}

/// Whether this build may run against a cluster finalized at `finalized`.
pub fn admit(finalized: Format) -> Result<(), Refusal> {
    if finalized > NEWEST {
        Err(Refusal::Behind { finalized })
    } else if finalized < OLDEST {
        Err(Refusal::Ahead { finalized })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(reads: &[(&str, Format)]) -> Facts {
        Facts {
            group: vec!["a".into(), "b".into(), "c".into()],
            reads: reads.iter().map(|(i, r)| (i.to_string(), *r)).collect(),
            finalized: UNTAGGED,
            requested: None,
            finalize_after_ms: Some(1000),
            all_newest_since_ms: None,
            new_cluster: false,
            now_ms: 10_000,
        }
    }

    #[test]
    fn a_new_cluster_is_finalized_at_once_when_every_instance_reads_the_newest_format() {
        let f = Facts {
            new_cluster: true,
            ..facts(&ALL_NEW)
        };
        let a = assess(&f);
        assert_eq!(a.next, Next::Finalize { to: NEWEST });
        assert!(a.reason.contains("a new cluster"), "{}", a.reason);
        // Not while an instance is behind or unheard.
        let mixed = Facts {
            new_cluster: true,
            ..facts(&[("a", NEWEST), ("b", NEWEST)])
        };
        assert_eq!(assess(&mixed).next, Next::WaitsForInstances { to: NEWEST });
        // Without it: the usual wait.
        assert!(matches!(
            assess(&facts(&ALL_NEW)).next,
            Next::FinalizesAt { .. }
        ));
    }

    const ALL_NEW: [(&str, Format); 3] = [("a", NEWEST), ("b", NEWEST), ("c", NEWEST)];

    #[test]
    fn a_mixed_group_writes_the_previous_format_and_names_who_it_waits_for() {
        let a = assess(&facts(&[("a", NEWEST), ("b", OLDEST)]));
        assert_eq!(a.writing, OLDEST);
        assert_eq!(a.next, Next::WaitsForInstances { to: NEWEST });
        assert_eq!(
            a.behind,
            vec![
                Behind {
                    instance: "b".into(),
                    reads: Some(OLDEST)
                },
                Behind {
                    instance: "c".into(),
                    reads: None
                }
            ]
        );
        assert!(a.reason.contains("b (reads format 1)"), "{}", a.reason);
        assert!(a.reason.contains("c (not heard in gossip)"), "{}", a.reason);
        assert_eq!(a.all_newest_since_ms, None);
    }

    #[test]
    fn a_request_waits_for_every_instance() {
        let mut f = facts(&[("a", NEWEST), ("b", NEWEST), ("c", OLDEST)]);
        f.requested = Some(NEWEST);
        assert_eq!(assess(&f).next, Next::WaitsForInstances { to: NEWEST });
        f.reads.insert("c".into(), NEWEST);
        let a = assess(&f);
        assert_eq!(a.next, Next::Finalize { to: NEWEST });
        assert_eq!(
            a.writing, OLDEST,
            "the record is written before writers switch"
        );
    }

    #[test]
    fn every_instance_on_the_newest_finalizes_by_itself_after_the_time_measured_from_the_last() {
        let f = facts(&ALL_NEW);
        let first = assess(&f);
        assert_eq!(first.all_newest_since_ms, Some(10_000));
        assert_eq!(
            first.next,
            Next::FinalizesAt {
                to: NEWEST,
                at_ms: 11_000
            }
        );
        let later = Facts {
            all_newest_since_ms: first.all_newest_since_ms,
            now_ms: 11_000,
            ..f.clone()
        };
        assert_eq!(assess(&later).next, Next::Finalize { to: NEWEST });
        // An instance going back restarts the clock.
        let mut back = later.clone();
        back.reads.insert("b".into(), OLDEST);
        let b = assess(&back);
        assert_eq!(b.all_newest_since_ms, None);
        assert_eq!(b.next, Next::WaitsForInstances { to: NEWEST });
    }

    #[test]
    fn with_automatic_finalization_off_only_the_operator_finalizes() {
        let mut f = facts(&ALL_NEW);
        f.finalize_after_ms = None;
        f.now_ms = u64::MAX;
        assert_eq!(assess(&f).next, Next::WaitsForOperator { to: NEWEST });
        f.requested = Some(NEWEST);
        assert_eq!(assess(&f).next, Next::Finalize { to: NEWEST });
    }

    #[test]
    fn once_finalized_every_instance_writes_the_newest_and_an_older_one_is_named() {
        let mut f = facts(&[("a", NEWEST), ("b", NEWEST), ("c", OLDEST)]);
        f.finalized = NEWEST;
        let a = assess(&f);
        assert_eq!(a.writing, NEWEST);
        assert_eq!(a.next, Next::Current);
        assert!(a.reason.contains("c (reads format 1)"), "{}", a.reason);
    }

    #[test]
    fn an_empty_group_never_finalizes() {
        let mut f = facts(&[]);
        f.group.clear();
        f.requested = Some(NEWEST);
        assert_eq!(assess(&f).next, Next::WaitsForInstances { to: NEWEST });
    }

    #[test]
    fn a_build_runs_only_against_its_own_format_and_the_previous() {
        assert_eq!(admit(OLDEST), Ok(()));
        assert_eq!(admit(NEWEST), Ok(()));
        assert_eq!(
            admit(NEWEST + 1),
            Err(Refusal::Behind {
                finalized: NEWEST + 1
            })
        );
        let msg = admit(NEWEST + 1).unwrap_err().to_string();
        assert!(msg.contains("more than one release behind"), "{msg}");
        if OLDEST > 1 {
            assert!(matches!(admit(OLDEST - 1), Err(Refusal::Ahead { .. })));
        }
        assert!(reads(UNTAGGED));
    }
}
