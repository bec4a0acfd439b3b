//! What a seed sets up: the cluster, its data, and the faults to inject.

use super::rng::Rng;
use crate::fenced::ids::Millis;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// Incarnation 3 loses its quorum; some members come back, some lost
    /// their disk, some are terminated and replaced.
    QuorumLoss,
    /// Nothing exists: bootstrap incarnation 1.
    Bootstrap,
    /// Every disk was lost: the store holds records (and maybe a snapshot);
    /// the listing fails at first.
    WipedCluster,
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
    /// When each instance boots (bootstrap: instances start at random times).
    pub boot_at: Vec<Millis>,
    pub accept_loss_after: Option<Millis>,
    /// Crash the first coordinator seen proposing (stage accepting or
    /// creating), keeping its disk, and restart it this long after: the
    /// next coordinator must carry the accepted value on.
    pub coordinator_crash: Option<Millis>,
    /// A decision (or a healed cluster) is expected.
    pub expect_live: bool,
}

pub const FAULTS_UNTIL: Millis = 120_000;

impl Scenario {
    pub fn generate(seed: u64) -> Scenario {
        let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(7));
        let nodes = [3, 5, 7][rng.below(3) as usize];
        let kind = match rng.below(10) {
            0 => Kind::Bootstrap,
            1 => Kind::WipedCluster,
            _ => Kind::QuorumLoss,
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
        let mut boot_at = vec![0; nodes];
        let mut accept_loss_after = None;
        let mut expect_live = true;
        match kind {
            Kind::QuorumLoss => {
                let quorum = nodes / 2 + 1;
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
            Kind::Bootstrap => {
                for b in boot_at.iter_mut() {
                    *b = rng.below(60_000);
                }
            }
            Kind::WipedCluster => {
                outages.push((0, rng.range(10_000, 90_000)));
                expect_live = snapshot.is_some();
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
            boot_at,
            accept_loss_after,
            coordinator_crash,
            expect_live,
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
