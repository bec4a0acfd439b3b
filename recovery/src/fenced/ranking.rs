//! Ranking the data that could seed the next incarnation.
//!
//! By `(incarnation, WAL commit index)`; the newest store snapshot competes
//! by its recorded position. Revision is a consistency check: one position
//! with two revisions means the data disagree — stop and alert. Two cluster
//! ids within one incarnation: the same. Ties: live data over the store,
//! then the lowest instance id.

use super::ids::{Incarnation, InstanceId};
use super::observation::{DataReport, SnapshotFacts};
use super::value::SeedSource;
use std::collections::BTreeMap;
use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RankError {
    #[error(
        "{a} and {b} are both at incarnation {incarnation}, commit index {commit_index} but at revisions {ra} and {rb}: the data disagree; stop and page a human"
    )]
    RevisionConflict {
        a: String,
        b: String,
        incarnation: Incarnation,
        commit_index: u64,
        ra: u64,
        rb: u64,
    },
    #[error(
        "{a} and {b} hold incarnation {incarnation} of two different clusters ({ca:?} and {cb:?}); stop and page a human"
    )]
    ClusterConflict {
        a: String,
        b: String,
        incarnation: Incarnation,
        ca: u64,
        cb: u64,
    },
    #[error("no instance holds data and the store has no snapshot: nothing to seed from")]
    NoData,
}

struct Candidate {
    name: String,
    source: SeedSource,
    cluster_id: Option<u64>,
    revision: u64,
    /// 1 for live data, 0 for the store (live wins ties).
    live: u8,
}

fn candidates(
    reports: &BTreeMap<InstanceId, DataReport>,
    snapshot: Option<&SnapshotFacts>,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = reports
        .iter()
        .filter(|(_, r)| r.data.has_data)
        .map(|(id, r)| Candidate {
            name: id.clone(),
            source: SeedSource::Member {
                holder: id.clone(),
                cluster_id: r.data.cluster_id,
                incarnation: r.data.incarnation,
                commit_index: r.data.commit_index,
                revision: r.data.applied_revision,
            },
            cluster_id: r.data.cluster_id,
            revision: r.data.applied_revision,
            live: 1,
        })
        .collect();
    if let Some(s) = snapshot {
        out.push(Candidate {
            name: format!("store snapshot {}", s.name),
            source: SeedSource::Store {
                name: s.name.clone(),
                cluster_id: s.cluster_id,
                incarnation: s.incarnation,
                commit_index: s.commit_index,
                revision: s.revision,
            },
            cluster_id: s.cluster_id,
            revision: s.revision,
            live: 0,
        });
    }
    out
}

/// The best source among the reports (instances holding data) and the
/// store's newest snapshot. `by_lowest_id` is the deliberate bug of
/// [`super::Faults::rank_by_lowest_id`].
pub fn rank(
    reports: &BTreeMap<InstanceId, DataReport>,
    snapshot: Option<&SnapshotFacts>,
    by_lowest_id: bool,
) -> Result<SeedSource, RankError> {
    let all = candidates(reports, snapshot);
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let (pa, pb) = (a.source.position(), b.source.position());
            if pa.0 != pb.0 {
                continue;
            }
            if let (Some(ca), Some(cb)) = (a.cluster_id, b.cluster_id)
                && ca != cb
            {
                return Err(RankError::ClusterConflict {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    incarnation: pa.0,
                    ca,
                    cb,
                });
            }
            // 0 means "not known": a member's revision is only known
            // once its WAL is replayed (the backend applies after the WAL
            // commits, so the revision read from a stopped member's disk
            // may lag its commit index; comparing those would cry
            // conflict over a healthy apply backlog).
            let known = a.revision != 0 && b.revision != 0;
            if known && pa.1 == pb.1 && a.revision != b.revision {
                return Err(RankError::RevisionConflict {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    incarnation: pa.0,
                    commit_index: pa.1,
                    ra: a.revision,
                    rb: b.revision,
                });
            }
        }
    }
    if by_lowest_id && let Some(c) = all.iter().find(|c| c.live == 1) {
        return Ok(c.source.clone());
    }
    // Max position; then live over store; then lowest id (reports iterate
    // in id order, so the first maximum is the lowest id).
    let mut best: Option<&Candidate> = None;
    for c in &all {
        let better = match best {
            None => true,
            Some(b) => (c.source.position(), c.live) > (b.source.position(), b.live),
        };
        if better {
            best = Some(c);
        }
    }
    best.map(|c| c.source.clone()).ok_or(RankError::NoData)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fenced::observation::LocalData;

    fn report(cluster: u64, incarnation: u64, commit: u64, revision: u64) -> DataReport {
        DataReport {
            data: LocalData {
                cluster_id: Some(cluster),
                incarnation,
                commit_index: commit,
                applied_revision: revision,
                has_data: true,
            },
            has_state: true,
            voters: Vec::new(),
        }
    }

    fn snap(cluster: u64, incarnation: u64, commit: u64, revision: u64) -> SnapshotFacts {
        SnapshotFacts {
            name: format!("s-{incarnation}-{commit}"),
            cluster_id: Some(cluster),
            incarnation,
            commit_index: commit,
            revision,
        }
    }

    /// Who seeds, or which error: "i-xx" for a member, "store" for the
    /// snapshot, "conflict"/"no data" for errors.
    fn winner(r: Result<SeedSource, RankError>) -> String {
        match r {
            Ok(SeedSource::Member { holder, .. }) => holder,
            Ok(SeedSource::Store { .. }) => "store".into(),
            Ok(SeedSource::Empty) => "empty".into(),
            Err(RankError::NoData) => "no data".into(),
            Err(_) => "conflict".into(),
        }
    }

    #[test]
    fn table() {
        let empty = DataReport {
            data: LocalData::empty(),
            has_state: false,
            voters: Vec::new(),
        };
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, Vec<(&str, DataReport)>, Option<SnapshotFacts>, &str)> = vec![
            (
                "highest commit index wins",
                vec![
                    ("i-00", report(7, 3, 1003, 2006)),
                    ("i-01", report(7, 3, 1005, 2010)),
                ],
                None,
                "i-01",
            ),
            (
                "a newer incarnation beats a higher index",
                vec![
                    ("i-00", report(7, 2, 9000, 9000)),
                    ("i-01", report(7, 3, 10, 20)),
                ],
                None,
                "i-01",
            ),
            (
                "a tie goes to the lowest id",
                vec![
                    ("i-01", report(7, 3, 1005, 2010)),
                    ("i-00", report(7, 3, 1005, 2010)),
                ],
                None,
                "i-00",
            ),
            (
                "the store wins when it is ahead",
                vec![("i-00", report(7, 3, 1005, 2010))],
                Some(snap(7, 3, 1007, 2014)),
                "store",
            ),
            (
                "live data wins a tie with the store",
                vec![("i-00", report(7, 3, 1005, 2010))],
                Some(snap(7, 3, 1005, 2010)),
                "i-00",
            ),
            (
                "an older incarnation's snapshot loses to live data",
                vec![("i-00", report(7, 3, 10, 20))],
                Some(snap(6, 2, 5000, 10000)),
                "i-00",
            ),
            (
                "instances without data do not compete",
                vec![("i-00", empty.clone()), ("i-01", report(7, 3, 10, 20))],
                None,
                "i-01",
            ),
            (
                "one position, two revisions: conflict",
                vec![
                    ("i-00", report(7, 3, 1005, 2010)),
                    ("i-01", report(7, 3, 1005, 2011)),
                ],
                None,
                "conflict",
            ),
            (
                "an unknown revision (0: not yet replayed) is no conflict",
                vec![
                    ("i-00", report(7, 3, 1005, 0)),
                    ("i-01", report(7, 3, 1005, 2011)),
                ],
                None,
                "i-00",
            ),
            (
                "two clusters in one incarnation: conflict",
                vec![
                    ("i-00", report(7, 3, 1005, 2010)),
                    ("i-01", report(8, 3, 1001, 2002)),
                ],
                None,
                "conflict",
            ),
            ("nothing anywhere", vec![("i-00", empty)], None, "no data"),
        ];
        for (name, reports, snapshot, want) in cases {
            let reports: BTreeMap<InstanceId, DataReport> = reports
                .into_iter()
                .map(|(id, r)| (id.to_string(), r))
                .collect();
            assert_eq!(
                winner(rank(&reports, snapshot.as_ref(), false)),
                want,
                "{name}"
            );
        }
    }
}
