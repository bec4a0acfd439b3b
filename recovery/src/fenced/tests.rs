//! The fenced protocol under the deterministic harness: no invariant is
//! violated over many seeds, every deliberate bug is caught, and a seed
//! replays exactly.

use super::Faults;
use super::harness::{self, Kind};

/// Seeds the suite runs (each one a scenario: 3, 5 or 7 instances, crashes,
/// lost disks, terminations, a coordinator crash mid-proposal, store
/// outages, a lossy and duplicating network). Larger sweeps:
/// `cargo run --release -p simulations -- fenced --seeds 2000`.
const SEEDS: u64 = 100;
/// How far each deliberate bug is hunted (each stops at the first catch).
const TEETH_SEEDS: u64 = 300;

#[test]
fn no_invariant_is_violated_over_many_seeds() {
    let s = harness::run_many(0..SEEDS, &Faults::default());
    println!("{s:?}");
    assert_eq!(
        s.violations, 0,
        "seed {:?}: {:?} (replay: SEED=<seed> cargo test -p recovery replay_seed -- --ignored --nocapture)",
        s.first_failing_seed, s.first_violation
    );
    assert_eq!(s.runs, SEEDS);
    // Liveness is an invariant of each run (a decision, or a healthy
    // cluster, once the faults stop); most runs must also decide.
    assert!(s.decisions * 2 > SEEDS, "decisions: {}", s.decisions);
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
/// `SEED=25 cargo test -p recovery replay_seed -- --ignored --nocapture`.
#[test]
#[ignore]
fn replay_seed() {
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut w = harness::World::new(seed, Faults::default());
    let decided = w.run();
    println!(
        "seed {seed}: {:?}, fates {:?}, commits {:?}, snapshot {:?}, outages {:?}; decided at {decided:?}, ended at {} ms",
        w.sc.kind, w.sc.fates, w.sc.commits, w.sc.snapshot, w.sc.outages, w.now
    );
    for r in w.records.values() {
        println!("record {r:?}");
    }
    println!("seeds {:?}", w.seeds);
    println!("violations {:#?}", w.violations);
    for n in &w.nodes {
        match &n.proto {
            Some(p) => println!(
                "{} voter={} data={:?}\n  state={:?}\n  {:?}",
                n.id,
                n.voter,
                n.data,
                p.state(),
                p.explain()
            ),
            None => println!("{} down (terminated={})", n.id, n.terminated),
        }
    }
}
