//! The fenced protocol under the deterministic harness: no invariant is
//! violated over many seeds, every deliberate bug is caught, and a seed
//! replays exactly.

use super::Faults;
use super::harness::{self, Kind};

/// Seeds the suite runs (each one a scenario: 3, 5 or 7 instances, crashes,
/// lost disks, terminations, a coordinator crash mid-proposal, store
/// outages, a lossy and duplicating network). Larger sweeps:
/// `cargo run --release -p simulations -- sim --seeds 100000`.
const SEEDS: u64 = 1000;
/// How far each deliberate bug is hunted (each stops at the first catch).
const TEETH_SEEDS: u64 = 300;

#[test]
fn no_invariant_is_violated_over_many_seeds() {
    // Two halves on two threads (CI has two cores).
    let half = SEEDS / 2;
    let (a, b) = std::thread::scope(|scope| {
        let first = scope.spawn(|| harness::run_many(0..half, &Faults::default()));
        let second = harness::run_many(half..SEEDS, &Faults::default());
        (first.join(), second)
    });
    let Ok(a) = a else {
        panic!("the first half panicked");
    };
    for s in [&a, &b] {
        println!("{s:?}");
        assert_eq!(
            s.violations, 0,
            "seeds {:?}: first {:?} (replay: cargo run --release -p simulations -- sim --seed <seed>)",
            s.failing_seeds, s.first_violation
        );
    }
    assert_eq!(a.runs + b.runs, SEEDS);
    // Liveness is an invariant of each run (a decision, or a healthy
    // cluster, once the faults stop); most runs must also decide.
    assert!((a.decisions + b.decisions) * 2 > SEEDS);
}

#[test]
fn every_kind_of_scenario_is_covered() {
    let kinds: Vec<Kind> = (0..SEEDS)
        .map(|seed| harness::Scenario::generate(seed).kind)
        .collect();
    for k in [Kind::QuorumLoss, Kind::Bootstrap, Kind::WipedCluster] {
        assert!(kinds.contains(&k), "no {k:?} scenario among the seeds");
    }
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [3, 17, 42] {
        assert_eq!(
            harness::run(seed, &Faults::default()),
            harness::run(seed, &Faults::default())
        );
    }
}

/// The first seed (of at most `limit`) on which `faults` produce a
/// violation.
fn caught(faults: &Faults, limit: u64) -> Option<(u64, String)> {
    (0..limit).find_map(|seed| {
        let o = harness::run(seed, faults);
        o.violations.first().map(|v| (seed, v.clone()))
    })
}

macro_rules! teeth {
    ($name:ident, $field:ident) => {
        #[test]
        fn $name() {
            let faults = Faults {
                $field: true,
                ..Faults::default()
            };
            let found = caught(&faults, TEETH_SEEDS);
            println!("{}: {found:?}", stringify!($field));
            assert!(
                found.is_some(),
                "the harness misses the deliberate bug `{}` over {TEETH_SEEDS} seeds",
                stringify!($field)
            );
        }
    };
}

teeth!(
    catches_a_promise_sent_before_it_is_persisted,
    skip_persist_promise
);
teeth!(catches_an_accepted_value_ignored, ignore_accepted_value);
teeth!(catches_ranking_by_instance_id, rank_by_lowest_id);
teeth!(
    catches_fresh_instances_counted_as_acceptors,
    count_fresh_as_acceptors
);
teeth!(
    catches_seeding_without_the_conditional_create,
    skip_conditional_create
);
teeth!(catches_a_store_error_read_as_empty, store_error_as_empty);

/// Replays one seed with a full account of the end state:
/// `SEED=25 cargo test -p recovery replay_seed -- --ignored --nocapture`
/// (or `cargo run --release -p simulations -- sim --seed 25`).
#[test]
#[ignore]
fn replay_seed() {
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (_, text) = harness::replay(seed, &Faults::default());
    println!("{text}");
}
