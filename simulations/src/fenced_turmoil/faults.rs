//! The faults a seed injects, all of them things turmoil (or the
//! provider) can do: partitions of random subsets (gossip and etcd traffic
//! together, or only one of them), the coordinator (the lowest live id)
//! isolated, one-way partitions, message loss, crashes with restart (with
//! or without the disk), a host down for good, an instance terminated and
//! replaced by a new id, the group grown or shrunk (the desired size
//! changed), flapping partitions, `kill -9` of every instance while
//! applying lags committing, store outages, listings whose continuation
//! pages fail, every snapshot deleted from the store. They stop at
//! [`FAULTS_UNTIL`]; then everything heals and every crashed host that may
//! come back restarts. A [`Targeted`] fault hits a moment of the
//! protocol instead of a time.

use recovery::fenced::Millis;
use recovery::fenced::harness::rng::Rng;

/// Faults are injected in `[WARMUP, FAULTS_UNTIL)`.
pub const WARMUP: Millis = 3_000;
pub const FAULTS_UNTIL: Millis = 30_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Cut these hosts from all others (both directions).
    Split(Vec<usize>),
    /// Cut only etcd traffic (raft, client) between these hosts and the
    /// others; gossip passes.
    SplitEtcd(Vec<usize>),
    /// Cut only gossip between these hosts and the others; etcd passes.
    SplitGossip(Vec<usize>),
    /// Cut the lowest live instance id (the first coordinator) from all.
    IsolateCoordinator,
    /// Drop traffic from `.0` to `.1` only.
    OneWay(usize, usize),
    /// Repair every partition.
    Heal,
    /// Message loss per mille on every link.
    Loss(u64),
    /// Crash the host; `wipe`: its disk is lost.
    Crash {
        host: usize,
        wipe: bool,
    },
    Restart(usize),
    /// Crash the host for good without telling the provider.
    Forever(usize),
    /// Terminate the host (certified gone) and start replacement slot
    /// `by` (a new id, empty disk).
    Replace {
        host: usize,
        by: usize,
    },
    StoreDown,
    StoreUp,
    /// The desired size grows: start slot `.0` (a new id, empty disk)
    /// without terminating anyone.
    Grow(usize),
    /// The desired size shrinks: terminate the host (certified gone), no
    /// replacement.
    Shrink(usize),
    /// Members apply slowly (a backlog between commit and applied grows),
    /// or no longer.
    SlowApply(bool),
    /// Continuation pages of the store's listings fail, or no longer.
    ListingTruncated(bool),
    /// Every snapshot is deleted from the store.
    DeleteSnapshots,
}

/// A crash aimed at a moment of the protocol, whenever it comes (faults
/// or not, within the first half of the liveness bound).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targeted {
    /// Crash the first coordinator seen proposing (its `Accept`s out).
    pub proposer: bool,
    /// Crash the first instance whose state file holds an accepted value.
    pub acceptor: bool,
    /// The crash loses the disk.
    pub wipe: bool,
    /// Instead of a crash, cut the instance from all others (healed when
    /// the restart would be).
    pub isolate: bool,
    /// Restart (or heal) this long after.
    pub restart_after: Millis,
}

/// A second quorum loss in the aftermath of the first recovery: once the
/// first record above incarnation 1 is seeded, `after` later (before,
/// during or after the joins' promotions and the record's update), the
/// leader's instance and enough other voters of the newest incarnation to
/// lose its quorum crash — and the learner, if one is joining, with
/// `learner_too` — each losing its disk with probability `wipe` per mille;
/// they restart `restart_after` later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecondLoss {
    pub after: Millis,
    pub wipe: u64,
    pub learner_too: bool,
    pub restart_after: Millis,
}

#[derive(Clone, Debug)]
pub struct Plan {
    /// Instances of incarnation 1.
    pub nodes: usize,
    /// Replacement slots (hosts `nodes..nodes + spares`).
    pub spares: usize,
    /// Time-ordered.
    pub events: Vec<(Millis, Fault)>,
    pub targeted: Option<Targeted>,
    /// A hostile keyholder outside the group (host `mallory`) sends forged
    /// recovery messages from this seed on: under group members' ids and
    /// its own. `None`: no forger.
    pub forger: Option<u64>,
    /// A second loss right after the first recovery (`None`: none).
    pub second_loss: Option<SecondLoss>,
}

impl Plan {
    pub fn generate(seed: u64, nodes: usize) -> Plan {
        let mut rng = Rng::new(seed.wrapping_mul(0x9e37).wrapping_add(nodes as u64));
        let spares = if nodes >= 5 { 3 } else { 2 };
        let mut events = Vec::new();
        let mut used_spares = 0;
        let mut forever = false;
        // A second stream for the kinds added later (independent cuts,
        // size changes, apply backlogs, listings, deleted snapshots).
        let mut more = Rng::new(seed ^ 0x0dd_fa17 ^ nodes as u64);
        let mut shrunk = false;
        let count = rng.range(2, 7);
        for _ in 0..count {
            let at = rng.range(WARMUP, FAULTS_UNTIL - 2_000);
            let until = (at + rng.range(2_000, 20_000)).min(FAULTS_UNTIL);
            if more.chance(350) {
                let at = more.range(WARMUP, FAULTS_UNTIL - 2_000);
                let until = (at + more.range(2_000, 20_000)).min(FAULTS_UNTIL);
                match more.below(100) {
                    // etcd traffic cut, gossip passes (or the reverse).
                    0..=29 => {
                        let side = random_side(&mut more, nodes);
                        let f = if more.chance(600) {
                            Fault::SplitEtcd(side)
                        } else {
                            Fault::SplitGossip(side)
                        };
                        events.push((at, f));
                        events.push((until, Fault::Heal));
                    }
                    // Desired size changed (mid-round, when a round runs).
                    30..=54 => {
                        if used_spares < spares && (shrunk || more.chance(500)) {
                            events.push((at, Fault::Grow(nodes + used_spares)));
                            used_spares += 1;
                        } else if !shrunk {
                            shrunk = true;
                            events.push((at, Fault::Shrink(more.below(nodes as u64) as usize)));
                        }
                    }
                    // kill -9 of everything while applying lags.
                    55..=79 => {
                        events.push((at, Fault::SlowApply(true)));
                        let kill = at + more.range(1_000, 3_000);
                        for h in 0..nodes {
                            let wipe = more.chance(200);
                            events.push((kill + more.below(200), Fault::Crash { host: h, wipe }));
                            let back = kill + more.range(2_000, 20_000);
                            if back < FAULTS_UNTIL {
                                events.push((back, Fault::Restart(h)));
                            }
                        }
                        events.push((kill + 1_000, Fault::SlowApply(false)));
                    }
                    80..=89 => {
                        events.push((at, Fault::ListingTruncated(true)));
                        events.push((until, Fault::ListingTruncated(false)));
                    }
                    _ => events.push((at, Fault::DeleteSnapshots)),
                }
                continue;
            }
            match rng.below(100) {
                // A majority crashes: the classic quorum loss.
                0..=29 => {
                    let k = nodes / 2 + 1 + rng.below(2) as usize;
                    let mut hosts: Vec<usize> = (0..nodes).collect();
                    shuffle(&mut rng, &mut hosts);
                    for h in hosts.into_iter().take(k.min(nodes)) {
                        let wipe = rng.chance(250);
                        let back = at + rng.range(5_000, 30_000);
                        events.push((at + rng.below(500), Fault::Crash { host: h, wipe }));
                        if !forever && rng.chance(80) {
                            forever = true;
                            events.push((at + 600, Fault::Forever(h)));
                        } else if back < FAULTS_UNTIL {
                            events.push((back, Fault::Restart(h)));
                        }
                    }
                }
                30..=44 => {
                    let h = rng.below(nodes as u64) as usize;
                    let wipe = rng.chance(300);
                    events.push((at, Fault::Crash { host: h, wipe }));
                    events.push((until, Fault::Restart(h)));
                }
                45..=59 => {
                    let side = random_side(&mut rng, nodes);
                    events.push((at, Fault::Split(side)));
                    events.push((until, Fault::Heal));
                }
                60..=67 => {
                    events.push((at, Fault::IsolateCoordinator));
                    events.push((until, Fault::Heal));
                }
                68..=75 => {
                    let a = rng.below(nodes as u64) as usize;
                    let b = (a + 1 + rng.below(nodes as u64 - 1) as usize) % nodes;
                    events.push((at, Fault::OneWay(a, b)));
                    if rng.chance(500) {
                        events.push((at, Fault::OneWay(b, (b + 1) % nodes)));
                    }
                    events.push((until, Fault::Heal));
                }
                76..=83 if used_spares < spares => {
                    let h = rng.below(nodes as u64) as usize;
                    let by = nodes + used_spares;
                    used_spares += 1;
                    events.push((at, Fault::Replace { host: h, by }));
                }
                84..=91 => {
                    events.push((at, Fault::Loss(rng.range(20, 150))));
                    events.push((until, Fault::Loss(0)));
                }
                _ => {
                    events.push((at, Fault::StoreDown));
                    events.push((until, Fault::StoreUp));
                }
            }
        }
        // Flapping: one side cut and healed again and again (a stream of
        // its own, so the draws above keep their seeds).
        let mut flap = Rng::new(seed ^ 0xf1a9_f1a9 ^ ((nodes as u64) << 8));
        if flap.chance(150) {
            let side = random_side(&mut flap, nodes);
            let plane = flap.below(3);
            let mut t = flap.range(WARMUP, FAULTS_UNTIL - 6_000);
            let end = (t + flap.range(4_000, 15_000)).min(FAULTS_UNTIL);
            while t < end {
                let cut = flap.range(300, 2_500);
                let f = match plane {
                    0 => Fault::Split(side.clone()),
                    1 => Fault::SplitEtcd(side.clone()),
                    _ => Fault::SplitGossip(side.clone()),
                };
                events.push((t, f));
                events.push((t + cut, Fault::Heal));
                t += cut + flap.range(300, 2_500);
            }
        }
        // A second loss in the first recovery's aftermath (a stream of its
        // own): half the seeds plan one, and those also get a first loss
        // to recover from (a majority crashes, some disks lost), so that
        // the second one comes.
        let mut second = Rng::new(seed ^ 0x02d1_1055 ^ ((nodes as u64) << 16));
        let second_loss = second.chance(500).then(|| {
            let at = second.range(WARMUP, FAULTS_UNTIL / 2);
            let mut hosts: Vec<usize> = (0..nodes).collect();
            shuffle(&mut second, &mut hosts);
            for h in hosts.into_iter().take(nodes / 2 + 1) {
                let wipe = second.chance(600);
                events.push((at + second.below(300), Fault::Crash { host: h, wipe }));
                events.push((at + second.range(3_000, 12_000), Fault::Restart(h)));
            }
            SecondLoss {
                after: second.below(8_000),
                wipe: [1_000, 700, 300][second.below(3) as usize],
                learner_too: second.chance(300),
                restart_after: second.range(1_000, 10_000),
            }
        });
        events.sort_by_key(|(t, _)| *t);
        let mut other = Rng::new(seed ^ 0x150_1a7e);
        let targeted = rng.chance(350).then(|| {
            let proposer = rng.chance(600);
            let wipe = rng.chance(200);
            Targeted {
                proposer,
                acceptor: !proposer,
                wipe,
                isolate: !wipe && other.chance(400),
                restart_after: rng.range(500, 8_000),
            }
        });
        Plan {
            nodes,
            spares,
            events,
            targeted,
            // A stream of its own: a seed without a forger is unchanged.
            forger: {
                let mut f = Rng::new(seed ^ 0xf0_46e5 ^ nodes as u64);
                f.chance(250).then(|| f.next_u64())
            },
            second_loss,
        }
    }
}

/// A random non-empty subset of the first `nodes` hosts.
fn random_side(rng: &mut Rng, nodes: usize) -> Vec<usize> {
    let mut side = Vec::new();
    for h in 0..nodes {
        if rng.chance(400) {
            side.push(h);
        }
    }
    if side.is_empty() {
        side.push(rng.below(nodes as u64) as usize);
    }
    side
}

fn shuffle(rng: &mut Rng, v: &mut [usize]) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}
