//! How this instance seeds incarnation `k` once the record naming it as
//! seeder exists (the commit point is the record, created before): the
//! steps still to do, computed from what is on disk and running now, so a
//! seeding interrupted at any point (a crash, a failed step) resumes by
//! asking again. One plan for both cases:
//!
//! - **incarnation 1** (formation, a group of one): the state file is
//!   written *first*, before etcd creates any data — a crash in between
//!   leaves a pending bootstrap that is retried with the same token (data
//!   without a state file would be refused as of unknown origin); then the
//!   initial snapshot, if any, is restored into the empty data directory,
//!   and etcd starts as a new one-member cluster. The snapshot writer
//!   stores its first snapshot (the store holds none of the new cluster).
//! - **incarnation n+1** (quorum-loss recovery): the old incarnation's data
//!   is turned into the seed *before* the state file names `n+1` — a state
//!   file of `n+1` beside data of `n` would restart old data under the new
//!   token. A WAL replay's result is kept as a snapshot file beside the
//!   data directory, named by the replay marker, so a seeder that crashes
//!   after moving its WAL aside restores the replay instead of replaying a
//!   WAL it no longer has. Not ready before the new cluster leads and a
//!   snapshot of it is in the store.
//!
//! What it does not do: decide who seeds or from what (formation and the
//! fenced protocol do), or any of the I/O.

use crate::fenced::SeedPlan;
use crate::planner::DataState;
use crate::startup::InitialSource;
use serde::{Deserialize, Serialize};

/// What the new incarnation is seeded from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeedFrom {
    /// A new, empty cluster.
    Empty,
    /// A snapshot in the store, by object name (sha256-verified on restore).
    Snapshot { name: String },
    /// This instance's WAL of the previous incarnation, replayed up to
    /// `commit_index`.
    Wal { commit_index: u64 },
}

impl From<&SeedPlan> for SeedFrom {
    fn from(plan: &SeedPlan) -> Self {
        match plan {
            SeedPlan::ReplayWal { commit_index, .. } => SeedFrom::Wal {
                commit_index: *commit_index,
            },
            SeedPlan::RestoreSnapshot { name, .. } => SeedFrom::Snapshot { name: name.clone() },
            SeedPlan::Fresh { .. } => SeedFrom::Empty,
        }
    }
}

impl From<&InitialSource> for SeedFrom {
    fn from(source: &InitialSource) -> Self {
        match source {
            InitialSource::Empty => SeedFrom::Empty,
            InitialSource::Snapshot { name, .. } => SeedFrom::Snapshot { name: name.clone() },
        }
    }
}

/// The state file, as far as seeding is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateAt<'a> {
    pub incarnation: u64,
    pub token: &'a str,
    /// Its `V_n` lists this instance: its data is a voter's, not a
    /// learner's (nor one that joined a moment ago and recorded nothing).
    pub votes: bool,
}

/// What the plan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedingFacts<'a> {
    /// The incarnation to seed, `k`.
    pub incarnation: u64,
    /// Its cluster token (from its record).
    pub token: &'a str,
    pub from: &'a SeedFrom,
    pub state: Option<StateAt<'a>>,
    pub data: DataState,
    /// The snapshot a WAL replay produced, when the replay marker names
    /// one.
    pub replayed: Option<&'a str>,
    /// The etcd process runs (or is about to restart).
    pub etcd_running: bool,
}

/// One step, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeedStep {
    StopEtcd,
    /// Replay the old incarnation's WAL up to `commit_index` on a loopback
    /// copy, keep a snapshot of the result beside the data directory, and
    /// write the replay marker naming it. `from_backend`: the data is not a voter's (a
    /// learner's WAL cannot be replayed with `--force-new-cluster`): the
    /// copy applies its WAL as it is and its backend seeds the replay.
    ReplayWal {
        commit_index: u64,
        from_backend: bool,
    },
    /// Move the data directory aside (never delete it).
    MoveDataAside {
        why: String,
    },
    /// Restore this stored snapshot into the empty data directory under
    /// the new token.
    Restore {
        name: String,
    },
    /// Restore the snapshot the replay marker names.
    RestoreReplayed,
    /// Write the state file: incarnation `k`, its token, `V_k` = this
    /// instance, member id unknown.
    RecordState,
    /// Remove the replay's snapshot and its marker.
    ForgetReplay,
    /// Start etcd as a new one-member cluster.
    StartEtcd,
    /// Wait (bounded) until the new member leads.
    AwaitLeader,
    /// Record its member id in the state file.
    RecordMemberId,
    /// Store a snapshot of the new incarnation.
    SnapshotSeeded,
}

/// The steps still to do, or why seeding cannot go on.
pub fn plan(f: &SeedingFacts) -> Result<Vec<SeedStep>, String> {
    if f.incarnation <= 1 {
        plan_first(f)
    } else {
        plan_next(f)
    }
}

fn state_is_new(f: &SeedingFacts) -> bool {
    f.state
        .is_some_and(|s| s.incarnation == f.incarnation && s.token == f.token)
}

/// Incarnation 1: state first, then the initial snapshot, then etcd.
fn plan_first(f: &SeedingFacts) -> Result<Vec<SeedStep>, String> {
    let mut steps = Vec::new();
    if f.data == DataState::Unusable {
        return Err(
            "the data directory holds files that are not etcd data; eco never seeds over them"
                .into(),
        );
    }
    if !state_is_new(f) {
        if f.data == DataState::Present {
            return Err(format!(
                "the data directory holds etcd data that no state file of incarnation {} accounts for; eco never seeds over it",
                f.incarnation
            ));
        }
        steps.push(SeedStep::RecordState);
    }
    match f.from {
        SeedFrom::Snapshot { name } if f.data == DataState::Empty => {
            steps.push(SeedStep::Restore { name: name.clone() })
        }
        SeedFrom::Wal { .. } => {
            return Err("incarnation 1 has no previous incarnation whose WAL could seed it".into());
        }
        _ => {}
    }
    if !f.etcd_running {
        steps.push(SeedStep::StartEtcd);
    }
    Ok(steps)
}

/// Incarnation n+1: the seed first, then the state file, then etcd, its
/// leader and its first snapshot.
fn plan_next(f: &SeedingFacts) -> Result<Vec<SeedStep>, String> {
    let k = f.incarnation;
    let mut steps = Vec::new();
    let seeded = state_is_new(f) && f.data == DataState::Present;
    if !seeded {
        if state_is_new(f) {
            return Err(format!(
                "the state file names incarnation {k} but its data directory is {}: the seed is gone; restore it by hand (eco restore)",
                match f.data {
                    DataState::Empty => "empty",
                    _ => "unusable",
                }
            ));
        }
        steps.push(SeedStep::StopEtcd);
        let restore = match (f.from, f.replayed) {
            (SeedFrom::Wal { .. }, Some(_)) => Some(SeedStep::RestoreReplayed),
            (SeedFrom::Wal { commit_index }, None) => {
                let old = k - 1;
                match f.state {
                    Some(s) if s.incarnation == old && f.data == DataState::Present => {
                        steps.push(SeedStep::ReplayWal {
                            commit_index: *commit_index,
                            from_backend: !s.votes,
                        });
                    }
                    Some(s) if s.incarnation == old => {
                        return Err(format!(
                            "the record names this instance's WAL of incarnation {old} as the seed, but its data directory holds none"
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "the record names this instance's WAL of incarnation {old} as the seed, but its state file is not of incarnation {old}: there is no WAL of it to replay"
                        ));
                    }
                }
                Some(SeedStep::RestoreReplayed)
            }
            (SeedFrom::Snapshot { name }, _) => Some(SeedStep::Restore { name: name.clone() }),
            (SeedFrom::Empty, _) => None,
        };
        if f.data != DataState::Empty {
            steps.push(SeedStep::MoveDataAside {
                why: format!("before-incarnation-{k}"),
            });
        }
        steps.extend(restore);
        steps.push(SeedStep::RecordState);
        if matches!(f.from, SeedFrom::Wal { .. }) {
            steps.push(SeedStep::ForgetReplay);
        }
        steps.push(SeedStep::StartEtcd);
    } else if !f.etcd_running {
        steps.push(SeedStep::StartEtcd);
    }
    steps.extend([
        SeedStep::AwaitLeader,
        SeedStep::RecordMemberId,
        SeedStep::SnapshotSeeded,
    ]);
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use SeedStep::*;

    const NEW: &str = "c-3-new";
    const OLD: &str = "c-2-old";

    fn facts<'a>(from: &'a SeedFrom) -> SeedingFacts<'a> {
        SeedingFacts {
            incarnation: 3,
            token: NEW,
            from,
            state: Some(StateAt {
                incarnation: 2,
                token: OLD,
                votes: true,
            }),
            data: DataState::Present,
            replayed: None,
            etcd_running: false,
        }
    }

    fn new_state() -> Option<StateAt<'static>> {
        Some(StateAt {
            incarnation: 3,
            token: NEW,
            votes: true,
        })
    }

    const TAIL: [SeedStep; 3] = [AwaitLeader, RecordMemberId, SnapshotSeeded];

    fn with_tail(mut v: Vec<SeedStep>) -> Vec<SeedStep> {
        v.extend(TAIL);
        v
    }

    fn aside() -> SeedStep {
        MoveDataAside {
            why: "before-incarnation-3".into(),
        }
    }

    /// A learner's WAL (its state file does not list it among the voters)
    /// is replayed from its backend: etcd refuses `--force-new-cluster` on
    /// it.
    #[test]
    fn a_learners_wal_is_replayed_from_its_backend() {
        static WAL: SeedFrom = SeedFrom::Wal { commit_index: 1005 };
        let mut f = facts(&WAL);
        f.state = Some(StateAt {
            incarnation: 2,
            token: OLD,
            votes: false,
        });
        let steps = plan(&f).expect("a plan");
        assert_eq!(
            steps[1],
            ReplayWal {
                commit_index: 1005,
                from_backend: true
            }
        );
    }

    /// A WAL seed interrupted at every point resumes with the right steps.
    #[test]
    fn a_wal_seed_resumes_at_every_crash_point() {
        static WAL: SeedFrom = SeedFrom::Wal { commit_index: 1005 };
        type Edit = fn(&mut SeedingFacts<'static>);
        let cases: Vec<(&str, Edit, Vec<SeedStep>)> = vec![
            (
                "from the start (etcd frozen, stopped)",
                |_| {},
                with_tail(vec![
                    StopEtcd,
                    ReplayWal {
                        commit_index: 1005,
                        from_backend: false,
                    },
                    aside(),
                    RestoreReplayed,
                    RecordState,
                    ForgetReplay,
                    StartEtcd,
                ]),
            ),
            (
                "the replay was stored, the WAL not yet moved",
                |f| f.replayed = Some("c/snapshots/x.db"),
                with_tail(vec![
                    StopEtcd,
                    aside(),
                    RestoreReplayed,
                    RecordState,
                    ForgetReplay,
                    StartEtcd,
                ]),
            ),
            (
                "the WAL was moved aside, nothing restored",
                |f| {
                    f.replayed = Some("c/snapshots/x.db");
                    f.data = DataState::Empty;
                },
                with_tail(vec![
                    StopEtcd,
                    RestoreReplayed,
                    RecordState,
                    ForgetReplay,
                    StartEtcd,
                ]),
            ),
            (
                "restored, the state file not yet written: restore again",
                |f| f.replayed = Some("c/snapshots/x.db"),
                with_tail(vec![
                    StopEtcd,
                    aside(),
                    RestoreReplayed,
                    RecordState,
                    ForgetReplay,
                    StartEtcd,
                ]),
            ),
            (
                "the state file is written, etcd never started",
                |f| {
                    f.state = new_state();
                    f.replayed = Some("c/snapshots/x.db");
                },
                with_tail(vec![StartEtcd]),
            ),
            (
                "etcd runs: wait for its leader, then snapshot",
                |f| {
                    f.state = new_state();
                    f.etcd_running = true;
                },
                TAIL.to_vec(),
            ),
        ];
        for (case, edit, want) in cases {
            let mut f = facts(&WAL);
            edit(&mut f);
            assert_eq!(plan(&f), Ok(want), "{case}");
        }
    }

    #[test]
    fn a_snapshot_seed_and_an_empty_one() {
        let snap = SeedFrom::Snapshot {
            name: "c/snapshots/s.db".into(),
        };
        let restore = Restore {
            name: "c/snapshots/s.db".into(),
        };
        assert_eq!(
            plan(&facts(&snap)),
            Ok(with_tail(vec![
                StopEtcd,
                aside(),
                restore.clone(),
                RecordState,
                StartEtcd
            ]))
        );
        let mut wiped = facts(&snap);
        wiped.state = None;
        wiped.data = DataState::Empty;
        assert_eq!(
            plan(&wiped),
            Ok(with_tail(vec![StopEtcd, restore, RecordState, StartEtcd])),
            "a seeder whose disk was lost restores the stored snapshot"
        );
        let empty = SeedFrom::Empty;
        let mut f = facts(&empty);
        f.data = DataState::Empty;
        assert_eq!(
            plan(&f),
            Ok(with_tail(vec![StopEtcd, RecordState, StartEtcd]))
        );
    }

    #[test]
    fn a_seed_that_cannot_be_done_says_why() {
        let wal = SeedFrom::Wal { commit_index: 7 };
        let mut no_state = facts(&wal);
        no_state.state = None;
        assert!(
            plan(&no_state)
                .unwrap_err()
                .contains("no WAL of it to replay")
        );
        let mut no_data = facts(&wal);
        no_data.data = DataState::Empty;
        assert!(plan(&no_data).unwrap_err().contains("holds none"));
        let mut gone = facts(&wal);
        gone.state = new_state();
        gone.data = DataState::Empty;
        assert!(plan(&gone).unwrap_err().contains("the seed is gone"));
    }

    #[test]
    fn incarnation_one_writes_its_state_first() {
        let token = "c-1-t";
        let fresh = |from: &'static SeedFrom| SeedingFacts {
            incarnation: 1,
            token,
            from,
            state: None,
            data: DataState::Empty,
            replayed: None,
            etcd_running: false,
        };
        static EMPTY: SeedFrom = SeedFrom::Empty;
        static SNAP: std::sync::LazyLock<SeedFrom> =
            std::sync::LazyLock::new(|| SeedFrom::Snapshot {
                name: "c/snapshots/s.db".into(),
            });
        let snap: &'static SeedFrom = &SNAP;
        assert_eq!(plan(&fresh(&EMPTY)), Ok(vec![RecordState, StartEtcd]));
        let restore = Restore {
            name: "c/snapshots/s.db".into(),
        };
        assert_eq!(
            plan(&fresh(snap)),
            Ok(vec![RecordState, restore.clone(), StartEtcd])
        );
        let pending = SeedingFacts {
            state: Some(StateAt {
                incarnation: 1,
                token,
                votes: true,
            }),
            ..fresh(snap)
        };
        assert_eq!(
            plan(&pending),
            Ok(vec![restore, StartEtcd]),
            "a crash after the state file: the same token, restore, start"
        );
        let restored = SeedingFacts {
            data: DataState::Present,
            ..pending
        };
        assert_eq!(plan(&restored), Ok(vec![StartEtcd]));
        let running = SeedingFacts {
            etcd_running: true,
            ..restored
        };
        assert_eq!(plan(&running), Ok(vec![]));
        let foreign = SeedingFacts {
            data: DataState::Present,
            ..fresh(&EMPTY)
        };
        assert!(plan(&foreign).unwrap_err().contains("no state file"));
    }
}
