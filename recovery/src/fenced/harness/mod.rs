//! A deterministic multi-node harness of the fenced protocol: N = 3, 5, 7
//! instances of the real [`Protocol`](crate::fenced::Protocol) exchange
//! messages through a lossy, duplicating, reordering network, crash and
//! restart (keeping their state file, or losing their disk), against a
//! store with conditional create and outages. The invariants of
//! `crate::fenced` are checked on every step; liveness once the faults
//! stop. Plain Rust, a local SplitMix64: a seed replays exactly.

pub mod invariants;
pub mod rng;
pub mod scenario;
pub mod world;

use crate::fenced::Faults;
use serde::{Deserialize, Serialize};

pub use scenario::{Kind, Scenario};
pub use world::World;

/// The result of one seed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub seed: u64,
    pub nodes: usize,
    pub kind: Kind,
    pub violations: Vec<String>,
    /// Milliseconds from the loss to the seeding, if seeded.
    pub decided_ms: Option<u64>,
    pub steps: u64,
}

impl Outcome {
    fn of(seed: u64, w: &World, decided_ms: Option<u64>) -> Outcome {
        Outcome {
            seed,
            nodes: w.sc.nodes,
            kind: w.sc.kind,
            violations: w.inv.violations.clone(),
            decided_ms,
            steps: w.steps,
        }
    }
}

/// Run one seed.
pub fn run(seed: u64, faults: &Faults) -> Outcome {
    let mut w = World::new(seed, faults.clone());
    let decided_ms = w.run();
    Outcome::of(seed, &w, decided_ms)
}

/// Replay one seed and describe its end state for a human: the scenario,
/// the records, the seeds, the violations, and each instance's state and
/// `explain()`.
pub fn replay(seed: u64, faults: &Faults) -> (Outcome, String) {
    use std::fmt::Write;
    let mut w = World::new(seed, faults.clone());
    let decided_ms = w.run();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "seed {seed}: {:?}, {} instances, fates {:?}, commits {:?}, snapshot {:?}, store outages {:?}, coordinator crash {:?}; decided at {decided_ms:?} ms, ended at {} ms",
        w.sc.kind,
        w.sc.nodes,
        w.sc.fates,
        w.sc.commits,
        w.sc.snapshot,
        w.sc.outages,
        w.sc.coordinator_crash,
        w.now
    );
    for r in w.records.values() {
        let _ = writeln!(text, "record {r:?}");
    }
    let _ = writeln!(
        text,
        "seeded (incarnation -> seeder, at ms): {:?}",
        w.inv.seeds
    );
    let _ = writeln!(text, "violations: {:#?}", w.inv.violations);
    for n in &w.nodes {
        match &n.proto {
            Some(p) => {
                let _ = writeln!(
                    text,
                    "{} voter={} data={:?}\n  state={:?}\n  {:?}",
                    n.id,
                    n.voter,
                    n.data,
                    p.state(),
                    p.explain()
                );
            }
            None => {
                let _ = writeln!(text, "{} down (terminated={})", n.id, n.terminated);
            }
        }
    }
    (Outcome::of(seed, &w, decided_ms), text)
}

/// Many seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub runs: u64,
    pub violations: u64,
    pub first_failing_seed: Option<u64>,
    pub first_violation: Option<String>,
    /// Every seed with a violation (replay each with `run`).
    pub failing_seeds: Vec<u64>,
    pub decisions: u64,
    pub decision_p50_s: f64,
    pub decision_p99_s: f64,
    pub steps: u64,
}

pub fn run_many(seeds: impl IntoIterator<Item = u64>, faults: &Faults) -> Summary {
    let mut s = Summary {
        runs: 0,
        violations: 0,
        first_failing_seed: None,
        first_violation: None,
        failing_seeds: Vec::new(),
        decisions: 0,
        decision_p50_s: 0.0,
        decision_p99_s: 0.0,
        steps: 0,
    };
    let mut times = Vec::new();
    for seed in seeds {
        let o = run(seed, faults);
        s.runs += 1;
        s.steps += o.steps;
        if !o.violations.is_empty() {
            s.violations += 1;
            s.failing_seeds.push(seed);
            if s.first_failing_seed.is_none() {
                s.first_failing_seed = Some(seed);
                s.first_violation = o.violations.first().cloned();
            }
        }
        if let Some(ms) = o.decided_ms {
            times.push(ms);
        }
    }
    times.sort_unstable();
    s.decisions = times.len() as u64;
    let pct = |p: f64| -> f64 {
        if times.is_empty() {
            return 0.0;
        }
        let i = ((times.len() as f64 - 1.0) * p).round() as usize;
        times[i.min(times.len() - 1)] as f64 / 1000.0
    };
    s.decision_p50_s = pct(0.5);
    s.decision_p99_s = pct(0.99);
    s
}
