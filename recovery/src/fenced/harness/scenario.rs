//! What a seed sets up: the cluster, its data, and the faults to inject.

use super::rng::Rng;
use crate::fenced::ids::Millis;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Incarnation 3 loses its quorum; some members come back, some lost
    /// their disk, some are terminated and replaced.
    QuorumLoss,
    /// Every disk was lost: the store holds records (and maybe a snapshot);
    /// the listing fails at first.
    WipedCluster,
    /// Incarnation 3 was just seeded by a recovery and is loses its quorum
    /// again in the aftermath: some of the joins are voters, one may still
    /// be a learner, and the views of `V_3` lag behind each other — the
    /// store's record and every member's state file stopped at some
    /// promotion ([`Aftermath`]).
    Aftermath,
}

/// Where in a recovery's aftermath the second loss strikes: the seeder
/// (instance 0) and `promoted` joins (instances `1..=promoted`) are
/// voters; instance `promoted + 1` is a learner holding data when
/// `learner`; the rest joined the new incarnation but are not members yet
/// (their data moved aside). Each view lists the seeder and a prefix of
/// the promotions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aftermath {
    pub promoted: usize,
    pub learner: bool,
    /// Promotions the store's record lists (never fewer than `promoted`;
    /// one more while a promotion recorded first has not happened yet).
    pub record_promoted: usize,
    /// The store's record lists the learner.
    pub record_learner: bool,
    /// Promotions each member's state file lists (instances `0..=promoted`,
    /// then the learner's).
    pub view_promoted: Vec<usize>,
    /// The instances that joined but are not members yet hold a state
    /// file of the new incarnation (else: none, a fresh start).
    pub joiners_have_state: bool,
}

impl Aftermath {
    /// The learner's instance index, if there is one.
    pub fn learner_index(&self) -> Option<usize> {
        self.learner.then_some(self.promoted + 1)
    }
}

/// What happens to one member at the quorum loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Stays,
    /// Crashes, keeps its disk, restarts at the given time.
    Restarts(Millis),
    /// Crashes and comes back with an empty disk.
    Wiped(Millis),
    /// Terminated: certified gone by the provider at that time; a
    /// replacement (new id) starts later.
    Terminated(Millis),
    /// Down and never back, never certified gone.
    Forever,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub kind: Kind,
    pub nodes: usize,
    pub fates: Vec<Fate>,
    /// Commit index of each member's WAL (revision = 2 × commit index).
    pub commits: Vec<u64>,
    /// Store snapshot `(incarnation, commit index)`.
    pub snapshot: Option<(u64, u64)>,
    /// Store outages `[from, to)`.
    pub outages: Vec<(Millis, Millis)>,
    /// Windows `[from, to)` in which only the snapshot listing fails (the
    /// records answer): a snapshot that holds the newest data must never
    /// be read as absent.
    pub snapshot_listing_outages: Vec<(Millis, Millis)>,
    /// A hostile keyholder outside the group sends forged messages at
    /// these times (`Decided` for records the store does not hold,
    /// prepares and accepts under an id the group does not have).
    pub forgeries: Vec<Millis>,
    pub accept_loss_after: Option<Millis>,
    /// Crash the first coordinator seen proposing (stage accepting or
    /// creating), keeping its disk, and restart it this long after: the
    /// next coordinator must carry the accepted value on.
    pub coordinator_crash: Option<Millis>,
    /// A decision (or a healed cluster) is expected.
    pub expect_live: bool,
    /// [`Kind::Aftermath`]: where the second loss strikes.
    pub aftermath: Option<Aftermath>,
}

pub const FAULTS_UNTIL: Millis = 120_000;

impl Scenario {
    pub fn generate(seed: u64) -> Scenario {
        let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(7));
        let nodes = [3, 5, 7][rng.below(3) as usize];
        // (A tenth of the seeds were the protocol's own bootstrap, removed
        // since formation forms incarnation 1: they are quorum losses now,
        // and every other seed draws what it drew before.)
        let kind = match rng.below(10) {
            1 => Kind::WipedCluster,
            _ => Kind::QuorumLoss,
        };
        // From a stream of its own (every other draw of a seed stays what
        // it was before this kind existed): a third of the quorum-loss
        // seeds strike in a recovery's aftermath instead.
        let mut after = Rng::new(seed.wrapping_mul(7919).wrapping_add(29));
        let kind = if kind == Kind::QuorumLoss && after.chance(333) {
            Kind::Aftermath
        } else {
            kind
        };
        let base = 1_000;
        let commits: Vec<u64> = (0..nodes).map(|_| base + rng.below(6)).collect();
        let top = commits.iter().copied().max().unwrap_or(base);
        let snapshot = match rng.below(10) {
            0..=2 => None,
            3..=4 => Some((3, top + 1 + rng.below(3))), // the store is ahead of everyone
            5 => Some((2, 5_000)),                      // older incarnation, higher index
            _ => Some((3, base - 1 - rng.below(50))),
        };
        let mut outages = Vec::new();
        for _ in 0..rng.below(4) {
            let from = rng.below(FAULTS_UNTIL);
            outages.push((from, from + rng.range(1_000, 30_000)));
        }
        let mut fates = vec![Fate::Stays; nodes];
        let mut accept_loss_after = None;
        let mut expect_live = true;
        let mut aftermath = None;
        match kind {
            Kind::QuorumLoss => {
                let quorum = crate::quorum::quorum(nodes);
                let down = rng.range((nodes - quorum + 1) as u64, (nodes - 1) as u64) as usize;
                let mut order: Vec<usize> = (0..nodes).collect();
                for i in (1..nodes).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    order.swap(i, j);
                }
                let forever = rng.chance(150);
                for (k, &i) in order.iter().take(down).enumerate() {
                    fates[i] = match rng.below(100) {
                        _ if forever && k == 0 => Fate::Forever,
                        0..=54 => Fate::Restarts(rng.range(5_000, 150_000)),
                        55..=69 => Fate::Restarts(rng.range(150_000, 300_000)),
                        70..=84 => Fate::Wiped(rng.range(5_000, 100_000)),
                        _ => Fate::Terminated(rng.range(0, 60_000)),
                    };
                }
                if forever {
                    accept_loss_after = Some(150_000);
                }
            }
            Kind::WipedCluster => {
                outages.push((0, rng.range(10_000, 90_000)));
                expect_live = snapshot.is_some();
            }
            Kind::Aftermath => {
                let promoted = after.below(nodes as u64) as usize;
                let learner = promoted + 1 < nodes && after.chance(600);
                // The store's record is never behind a promotion or a
                // join (recovery::voters: a promotion is recorded before it
                // takes effect, a learner records itself before its etcd
                // starts); it may be ahead: a promotion recorded whose call
                // has not happened yet.
                let record_promoted = promoted + usize::from(learner && after.chance(300));
                let record_learner = learner;
                let holders = promoted + 1 + usize::from(learner);
                let view_promoted = (0..holders)
                    .map(|i| {
                        let lo = i.saturating_sub(1).min(promoted);
                        lo + after.below((promoted - lo) as u64 + 1) as usize
                    })
                    .collect();
                // The loss: a majority of the voters, the seeder (the
                // usual leader) among them in most seeds; the learner
                // may go too.
                let voters = promoted + 1;
                let quorum = crate::quorum::quorum(voters);
                let down = after.range((voters - quorum + 1) as u64, voters as u64) as usize;
                let mut order: Vec<usize> = (0..voters).collect();
                for i in (1..voters).rev() {
                    let j = after.below(i as u64 + 1) as usize;
                    order.swap(i, j);
                }
                if after.chance(700)
                    && let Some(p) = order.iter().position(|i| *i == 0)
                {
                    order.swap(0, p);
                }
                let fate = |after: &mut Rng| match after.below(100) {
                    0..=59 => Fate::Wiped(after.range(2_000, 60_000)),
                    60..=84 => Fate::Restarts(after.range(2_000, 150_000)),
                    _ => Fate::Terminated(after.range(0, 60_000)),
                };
                for &i in order.iter().take(down) {
                    fates[i] = fate(&mut after);
                }
                if learner && after.chance(400) {
                    fates[promoted + 1] = fate(&mut after);
                }
                accept_loss_after = None;
                // Live only if some holder of the data keeps its disk (or
                // the store holds a snapshot of it): else the protocol
                // pages a human, as it must.
                let holder_survives =
                    (0..holders).any(|i| matches!(fates[i], Fate::Stays | Fate::Restarts(_)));
                expect_live = holder_survives || snapshot.is_some();
                aftermath = Some(Aftermath {
                    promoted,
                    learner,
                    record_promoted,
                    record_learner,
                    view_promoted,
                    joiners_have_state: after.chance(700),
                });
            }
        }
        let coordinator_crash = rng.chance(300).then(|| rng.range(1_000, 60_000));
        // From a stream of its own, so every other choice of a seed stays
        // what it was before this fault existed.
        let mut partial = Rng::new(seed.wrapping_mul(131).wrapping_add(17));
        let mut snapshot_listing_outages = Vec::new();
        if partial.chance(333) {
            for _ in 0..partial.range(1, 2) {
                let from = partial.below(FAULTS_UNTIL);
                snapshot_listing_outages.push((from, from + partial.range(1_000, 30_000)));
            }
        }
        let mut forgeries = Vec::new();
        if partial.chance(250) {
            for _ in 0..partial.range(5, 40) {
                forgeries.push(partial.below(FAULTS_UNTIL));
            }
        }
        Scenario {
            kind,
            nodes,
            fates,
            commits,
            snapshot,
            outages,
            snapshot_listing_outages,
            forgeries,
            accept_loss_after,
            coordinator_crash,
            expect_live,
            aftermath,
        }
    }

    pub fn store_down(&self, t: Millis) -> bool {
        self.outages.iter().any(|(a, b)| *a <= t && t < *b)
    }

    pub fn snapshot_listing_down(&self, t: Millis) -> bool {
        self.snapshot_listing_outages
            .iter()
            .any(|(a, b)| *a <= t && t < *b)
    }
}
